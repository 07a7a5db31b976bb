"""TW402: ``torch.load`` without ``map_location`` in code that uses a GPU."""

from __future__ import annotations

import ast
import os
from typing import Iterator

from torchwise.lint.engine import Context, argument, has_star_args, last_name
from torchwise.lint.findings import Finding
from torchwise.lint.rule import Rule
from torchwise.lint.semantics.checkpoints import (file_names, handed_on_whole, loaded_keys, saved_keys, saved_on_host,
                                                  saves_on_host)
from torchwise.lint.semantics.savefacts import (checkpoint_facts, device_savers, final_weights_on_host, folder_save_index,
                                                save_index)
from torchwise.lint.semantics.devices import gpu_evident, gpu_evident_near
from torchwise.lint.semantics.deadcode import in_dead_function
from torchwise.lint.semantics.branchloads import other_branch_maps
from torchwise.lint.semantics.fallback import gpu_only_file, pinned_gpu_script
from torchwise.lint.semantics.gpuresumes import data_parallel_resume, gpu_switch
from torchwise.lint.semantics.helpercallers import helper_for_evaluation, helper_reached_from_gpu
from torchwise.lint.semantics.helperrestores import restored_by_helper
from torchwise.lint.semantics.hostfixtures import host_fixture
from torchwise.lint.semantics.loadsites import (cached_in_branch, evaluation_script, every_rank_loads, gpu_project_load,
                                                reads_device_keys, reload_after_training_method, restored_into,
                                                restores_device_state, serves_evaluate_mode)
from torchwise.lint.semantics.callerreloads import reloaded_after_callers_save
from torchwise.lint.semantics.modefunctions import inference_mode_function
from torchwise.lint.semantics.ownsaves import reloads_own_save
from torchwise.lint.semantics.scriptloads import co_saved_with_device, model_built_from, script_level_checkpoint
from torchwise.lint.semantics.selfmoving import restores_self_moving_model
from torchwise.lint.semantics.selfsaves import restores_own_class_save
from torchwise.lint.semantics.samerun import fresh_name, reload_in_process, returned_by_saver, trainer_attribute_reload
from torchwise.lint.semantics.passedalways import option_never_passed
from torchwise.lint.semantics.passednames import passed_other_file
from torchwise.lint.semantics.starnames import star_names, star_qualname
from torchwise.lint.semantics.steps import is_eval_name, training_calls


def _host_keys(ctx: Context, load: ast.Call) -> bool:
    """Every key read from the loaded dict is saved (by this file or the project) with host data
    only: ``stats["mean"]`` where ``torch.save(dict(mean=np.mean(f, 0), ...))`` wrote it."""
    keys = loaded_keys(ctx, load)
    if not keys or handed_on_whole(ctx, load) or co_saved_with_device(ctx, load):
        return False  # (the dict handed to another function is read there: train(..., train_status); one saved with device data)
    host, device = saved_keys(ctx)
    _, project_host, project_device = checkpoint_facts(ctx.project)
    host |= project_host
    device |= project_device
    return keys <= host and not keys & device


def _saved_files_on_host(ctx: Context, load: ast.Call, names: set[str]) -> bool:
    """The file names this load reads are written by the project (this file included) with host
    data or no tensors only: ``torch.save(emb.weight.data.cpu(), "embedding.pt")`` in one
    script, ``torch.load("embedding.pt")`` in another; a pickled ``args``."""
    if not names:
        return False
    index = dict(save_index(ctx.project)) if ctx.project.save_files else {}
    if index and names & set(index):  # a name a script of its own folder writes is that script's file
        local = folder_save_index(ctx.project, os.path.dirname(ctx.path))
        index.update((n, local[n]) for n in names if n in local)
    own: dict[str, bool] = {}
    for save in ctx.calls_to("torch.save"):  # this file's own saves (also when linted alone)
        host = saved_on_host(ctx, save)
        for name in file_names(ctx, argument(save, "f", 1), save):
            own[name] = own.get(name, True) and host
    index.update(own)  # a script that writes the name itself reads back its own file (another script's is another run's)
    known = [index[n] for n in names if n in index]
    return bool(known) and all(known)


def _host_script_restores_gpu_save(ctx: Context, load: ast.Call) -> bool:
    """A script (a ``__main__`` block, or ``parse_args()``) with no device code at all (``generate_caption.py``, whose ``.cuda()`` lines are
    commented out) restores a model (``decoder.load_state_dict(torch.load(args.model))``) in a
    project where another file saves model state from a CUDA model: it runs on the CPU and reads
    CUDA tensors."""
    if gpu_evident(ctx) or not ctx.project.targets_gpu or not ctx.project.save_files or "device" in ctx.source \
            or not ("__main__" in ctx.source or "parse_args(" in ctx.source) \
            or restored_into(ctx, load) is None and not reads_device_keys(ctx, load) and not restored_by_helper(ctx, load):
        return False  # (a model module restoring a backbone's pretrained weights is no script that runs)
    savers = set(device_savers(ctx.project))
    return any(path != ctx.path and path in savers and (".cuda(" in text or "'cuda" in text or '"cuda' in text)
               for path, text in ctx.project.save_files)


def _gpu_machine_loads(ctx: Context, load: ast.Call) -> bool:
    """Loads that need ``map_location`` even in a project (or script) written only for GPUs: an
    evaluation or inference script (it trains nothing) restoring a model from a checkpoint the
    project's training writes from a device - it runs on other machines and GPU counts than
    training did - and a load that every process of a distributed training run makes (all onto
    ``cuda:0``). Not a file name that no save of the project writes (pretrained weights it ships)."""
    if not every_rank_loads(ctx, load) and not ((evaluation_script(ctx) or _evaluation_function(ctx, load)
                                                 or serves_evaluate_mode(ctx, load))
                                                and (restored_into(ctx, load) is not None or model_built_from(ctx, load)
                                                     or restored_by_helper(ctx, load)) and any(
            p != ctx.path or _evaluation_function(ctx, load) or serves_evaluate_mode(ctx, load)
            for p in device_savers(ctx.project))) and not helper_for_evaluation(ctx, load):
        return False
    names = file_names(ctx, argument(load, "f", 0), load)
    return not names or bool(names & set(save_index(ctx.project) if ctx.project.save_files else ()))
    # (a file name no save of the project writes: weights shipped or downloaded with it)


def _evaluation_function(ctx: Context, load: ast.Call) -> bool:
    """The load is in a function named for evaluation (``def test(args, io):``, run when
    ``args.eval`` is set) that trains nothing itself: the evaluation path of a training script,
    restoring the checkpoint its training wrote."""
    func = ctx.function_of(load)
    if func is None or not (is_eval_name(func.name) or inference_mode_function(ctx, load)) \
            or any(ctx.function_of(c) is func for c in training_calls(ctx)):
        return False  # (an inference mode: `if FLAGS.generate: generate() else: train()`)
    # a TensorRT engine (`TRTModule().load_state_dict(torch.load(trt_file))`) runs on the GPU it was built for only
    return not any(n.__class__ in (ast.Import, ast.ImportFrom) and any(e in ctx.text(n) for e in _GPU_ENGINES)
                   for n in ast.walk(func))


_GPU_ENGINES = ("torch2trt", "tensorrt")


def _helper_restores_device_state(ctx: Context, load: ast.Call) -> bool:
    """A load helper in a module with no device code (``def load_checkpoint(model, model_dir)``,
    a model's ``from_pretrained(self, path)``) restoring what the project's training saves from a
    GPU (the same dict key, the same submodule's state; a model class's ``load`` of what its own
    ``save`` writes, :mod:`.selfsaves`), in a project that also runs on the CPU: the helper runs
    wherever its caller does."""
    if ctx.function_of(load) is None or gpu_evident(ctx) or not ctx.project.targets_gpu or ctx.project.gpu_only \
            or not ctx.project.cpu_path_files or not ctx.project.save_files:
        return False
    return restores_device_state(ctx, load) or restores_own_class_save(ctx, load)


def _shipped_final_weights(ctx: Context, load: ast.Call, names: set[str]) -> bool:
    """``net.load_state_dict(torch.load(path))`` in a script that trains nothing (a stylizer, a
    demo), of a file no save of the project writes (weights shipped with it), while the final
    weights the project's training saves - outside its loop, not the checkpoints - are host data
    (``net.cpu()`` first): what it ships comes from the host."""
    parent = ctx.parent(load)
    if parent.__class__ is not ast.Call or last_name(parent.func) != "load_state_dict" or not ctx.project.save_files:
        return False
    if names & set(save_index(ctx.project)) or training_calls(ctx):
        return False
    return final_weights_on_host(ctx.project)


def _gpu_only_folder(ctx: Context) -> bool:
    """The file lies in a sub-project of a collection that is GPU-only by itself (TW403's
    ``gpu_only_dirs``: a text classifier's folder beside image classifiers, no CPU path in it)."""
    dirs = ctx.project.gpu_only_dirs
    return bool(dirs) and ctx.path.replace("\\", "/").startswith(dirs)


def _optimizer_state(ctx: Context, load: ast.Call) -> bool:
    """``optimizer.load_state_dict(torch.load(path))`` in a project that trains on a GPU (a
    checkpoint helper of a module that names no device itself): an optimizer's state (Adam's
    moments) lives where its parameters trained, so the file holds CUDA tensors."""
    parent = ctx.parent(load)
    if parent.__class__ is not ast.Call or parent.func.__class__ is not ast.Attribute or parent.func.attr != "load_state_dict":
        return False
    return "optim" in (last_name(parent.func.value) or "").lower() and ctx.project.targets_gpu


def _same_run_reload(ctx: Context, load: ast.Call, names: set[str]) -> bool:
    """A reload of what this run wrote a moment before (the best checkpoint after training), read
    back onto the device that wrote it - not where every process of a distributed run loads it:
    one rank wrote it (``if accelerator.is_main_process: torch.save(...)``) and every other rank
    restores its tensors onto that rank's device."""
    if not (returned_by_saver(ctx, load) or reload_in_process(ctx, load, names) or reload_after_training_method(ctx, load)
            or reloads_own_save(ctx, load) or trainer_attribute_reload(ctx, load) or reloaded_after_callers_save(ctx, load)):
        return False
    return not every_rank_loads(ctx, load)


class LoadWithoutMapLocation(Rule):
    code = "TW402"
    per_call = True
    name = "torch-load-no-map-location"
    triggers = ("load",)
    doc = """\
What it flags
  `torch.load(...)` without `map_location` (by keyword or as the second positional argument;
  also where torch reaches the file only through `from model import *` of a project module)
  in a file that evidently uses a GPU (`.cuda()`, a `"cuda"` device, `torch.cuda`), where the
  checkpoints it reads are likely to hold CUDA tensors - or an optimizer's state,
  `optimizer.load_state_dict(torch.load(path))`, in a checkpoint helper of a project that trains
  on a GPU (the moments live where the parameters trained) - or a model restored
  (`decoder.load_state_dict(torch.load(args.model))`) by a script (a `__main__` block or
  `parse_args()`) with no device code at all, in a project where another file saves model state
  from a CUDA model: that script runs on the CPU, also in a project otherwise GPU-only (also
  `state = torch.load(p)` then `net.load_state_dict(state)`, or an entry read by key, `ckpt["g_ema"]`,
  that the project saves with device tensors). Also in a project written only for GPUs: an
  evaluation or inference script (`__main__` or `parse_args()`, no training step) restoring a
  model from a checkpoint the project's training writes from the GPU (also a model built from the
  checkpoint and moved: `models.make(torch.load(p)["model"], load_sd=True).cuda()`) - it runs on other machines
  and GPU counts than training did; so does a function named for evaluation that trains nothing
  (`def test(args, io):` of a training script, run with `--eval`), and a `--resume` load that the
  evaluation-only branch after it serves (`if args.evaluate: validate(val_loader, model, ...);
  return`); a script whose backward passes only take the gradients of its inputs (a PGD attack
  evaluating a robust model: no optimizer step) trains nothing either (not one restoring a TensorRT
  engine, `torch2trt`'s `TRTModule`, which runs only on its GPU); not a file name no save of the
  project writes, such as shipped weights - and a load in a distributed training script
  (`DistributedDataParallel`, `init_process_group`) outside an `if` on the rank, also at its top
  level under `__main__` (`torch.load(cfg.finetune)["model"]`): every process
  restores onto `cuda:0` - also in a model's method (`def load_model_from_ckpt(self, path)`)
  that such a script calls (`base_model.load_model_from_ckpt(args.ckpts)`; a definition inside
  a sub-program's folder, one holding its own `__main__` script, counts only that folder's
  callers), not a file named by the rank (`"queue" + str(args.rank) + ".pth"`: each process
  reads back what it wrote from its own GPU). A projector that optimises a latent
  (`optim.Adam([latent_in] + noises)`) around an eval-mode model it restores trains no model:
  an inference script. And a load helper in a module with no device code
  (`def load_checkpoint(model, model_dir)`, a model's `from_pretrained(self, path)`) restoring the
  entry (`checkpoint["state"]`) or the submodule class that the project's training saves from a
  GPU, in a project that also runs on the CPU - also a model class that saves and restores
  itself (`def save(self): torch.save(self.state_dict(), name)` beside `def load(self, path):
  self.load_state_dict(torch.load(path))`, the tutorial `BasicModule` whose subclasses the
  scripts move to `opt.device`); such a helper is also judged by the files that call it (a function
  imported from its module or re-exported by its package, `utils.load_checkpoint(model, args.weights)`,
  or a method no other module defines, `model.load_param(path)`): reported when an evaluation or
  inference script calls it (R2, also in a GPU-only project) or, in a project with a CPU path, any
  caller does - not in the GPU branch of a choice whose other side reads onto the host, nor for a
  file name or entries (`ckpt["base"]`) no save of the project writes. A checkpoint handed to a restoring helper
  of the project (`ckpt = torch.load(p)`, then `load_state(net, ckpt)`, whose body fills
  `net.load_state_dict(...)` from `ckpt["state_dict"]`) is restored like one fed to
  `load_state_dict`; and a load helper in a module that uses the GPU itself (`def load_model(path)`
  of `utils/functions.py`) is an evaluation load where an evaluation script of another module calls
  it (`model = load_model(args.ckpt)` in `test.py`, R2) - not a branch the call turns off
  (`if D is not None:` with `D` passed as `None`, `if load_optim:` with `load_optim=False`), nor
  entries copied into a dict of settings, nor a library network the helper builds
  (`inception_v3(...)`, a bare `torch.nn.Embedding` table), nor a helper whose callers train. A
  save helper's dict of the model and optimizer handed to it (`def save_checkpoint(epoch, model,
  optimizer)`: `{"model": model, "optimizer": optimizer}`) holds their device tensors, not
  metadata. A model moved with a device getter of the
  project (`.to(get_device())`, imported from a helper that returns CUDA when there is one) is
  on a device like one moved with `.to(device)`; a checkpoint passed through a conversion helper
  before it is restored (`state = upgrade_keys(torch.load(p))`, then `load_state_dict(state)`)
  is restored like one loaded directly. A project
  whose every `.cuda()` is chosen by a flag (`Variable(x).cuda() if cuda else Variable(x)`, a
  `--no-gpus` option) has a CPU path, and so does one whose scripts call a helper of it that
  moves to CUDA only when a GPU is there (`tensor2var(x)`, `models.make(name)`: see TW403); their
  resumes are reported. Left alone: files that cannot hold GPU
  tensors because the file, or the project linted with it, writes every checkpoint from host
  data (`torch.save({k: v.cpu() ...})`, `.to("cpu")`, `model.cpu().state_dict()`, a method's save
  after the object moved itself to the host - `self.cpu()`, `self.prep(device="cpu")` with a
  method of the class that calls `.cpu()` -, NumPy arrays a
  helper of the file returns, every entry moved in a loop
  `for k in sd: sd[k] = sd[k].to(torch.device("cpu"))`, the state of a model built in a
  conversion script with no device code, a module moved to the host in place first: `net.cpu()`
  then `torch.save(net.state_dict(), f)`, also through a state variable, `state =
  net.module.state_dict() if hasattr(net, "module") else net.state_dict()`, NumPy statistics) -
  where a script of the loading file's own folder writes the file name it reads, that script's
  save decides (an old version's `evaluate.py` reads what `old/train.py` writes after `net.cpu()`,
  not what the new `tools/train.py` writes under the same name) -, weights shipped with the project
  (a file name no save of it writes) loaded into a model by a script that trains nothing, when
  the final weights its training saves - outside the loop, not the checkpoints - are host data
  (`train.py` ends with `net.cpu()` and the save; `stylize.py` loads `transforms/mosaic.pth`), loads
  of a file name (`"embedding.pt"`, `os.path.join(d, "training_args.bin")`) that the project
  only ever writes with host data (a save forwarder nothing calls, `def save_on_master(*args,
  **kwargs): torch.save(*args, **kwargs)` of a copied utility module, writes nothing), tensors built from NumPy in code that touches no device or
  pickled arguments, reloads of the checkpoint the same run wrote a few lines before (also
  through the file object: `with open(p, "wb") as f: torch.save(m, f)`, then `torch.load(open(p,
  "rb"))`) or under a
  name made fresh for the run (`ckpt = 'pretrained/' + uuid.uuid4().hex + '.pt'`), loads
  whose keys (`stats["mean"]`) are only ever saved with host data, the load in the GPU branch of
  `if torch.cuda.is_available():` (its `else` branch is the one reported), a cache read in the
  branch of `if os.path.exists(path):` beside the one that builds the object with no device code or
  model and saves it to that path (a tokenised corpus), a file name this script itself saves with
  host data (another script's save of that name is another run's), a trainer's `test()` reloading
  the best checkpoint its `train()` writes when every call of it in the project follows
  `trainer.train()`, loads in code that nothing in the project calls or names or
  under `if path != None:` of a parameter `path=None` that no call of the function passes
  (`trainer.test(model, args, loader)`; a function of a script ending in `fire.Fire()` is a
  command of it, never dead code), reference data a test or sanity-check script reads with
  `.numpy()` (`expected.numpy()`: CPU tensors) and the other files it loads from that folder (not a
  network restored from it), the best checkpoint
  reloaded after a training call in the same function or script (`train.train(...)`, then
  `torch.load(best_path)`: the same process and device; also the path a training method of the
  file saves the best state to and returns, `best_path = self._train(...)`), the path a trainer object keeps,
  read back after that trainer's training in the same scope (`trainer.train(args.epochs)`, then
  `torch.load(trainer.snapshot_path)`, where a module of the project saves to
  `self.snapshot_path`), a load helper every call of which in the project comes after its caller
  saved the file it reads, in the same function or script (`save_model(args, model, name)` writing
  `f'models/{name}.pt'`, then `load_model(args, name)` reading it; `predict_main(best_epoch)` after
  the loop that saved `'epoch_%s.params' % epoch`; a script's `test()` reloading the module-level
  `model_file` that its `train(epoch)` saves to, every call of `test()` after the training loop),
  loads in a method only a method nothing calls reaches (a `Model.load()`
  nothing calls; `pickle.load(` and `torch.load(` name no method of the project), a reload of what a save helper of the
  file wrote earlier in the same scope (`save_checkpoint(False)` in the loop writes
  `checkpoint_path`, then `torch.load(checkpoint_path)` after it) and a load helper whose every
  call follows such a save of the same path (`net.to_file(p)` then `DynamicNet.from_file(p, ...)`), a script's module-level reload, after
  its loop called the file's training function, of a file name the project saves (`with
  open(os.path.join(args.work_dir, "model.pt"), "rb") as f: model = torch.load(f)`), projects that are
  GPU-only by design (see TW403: no file of them can run without a GPU, or their training
  scripts always move the model they train to CUDA; also a GPU-only sub-project folder of a
  collection, and a project whose only device "flag" is a GPU id, `os.environ["CUDA_VISIBLE_DEVICES"]
  = str(args.cuda)`), a resume inside a training function
  (`def train(self): ... if resume: ckpt = torch.load(path)`) in a project none of whose
  files has a CPU path (a `map_location="cpu"` elsewhere is none: it restores where it trains;
  the project's evaluation loads are still reported) - except a script that turns the GPU on
  by an opt-in flag (`parser.add_argument('-gpu', action='store_true')`, its default run is
  on the CPU, the model moved in a helper under `if args.gpu:`), a resume that only works on the wrapped
  model (`self.model.module.load_state_dict(package[...])`, unguarded) in a project that wraps
  only in `nn.DataParallel` (one process, on CUDA; with `DistributedDataParallel` every rank
  would restore onto `cuda:0`: reported), and single-process
  scripts that pick their one GPU themselves (`os.environ["CUDA_VISIBLE_DEVICES"] = args.gpu`)
  and can only run on it (`.cuda()` with no GPU check, no `"cpu"` device and no device flag
  anywhere): what they save comes from `cuda:0` of one visible device and resuming or
  evaluating restores it there; TW403 asks for the CPU fallback first, and once there is one
  this rule speaks. The reloads of what the same run wrote are reported where every process of
  a distributed run makes them (rank 0 saved the best model; every rank restores it onto rank 0's
  GPU). At a script's top level (its `__main__` block), a device chosen in another module
  (`.to(DEVICE)`, `DEVICE` imported from the model module) counts like one named here, for loads
  that evidently read a checkpoint: restored into a model, a whole pickled model used as one
  (`m.encoder.rnn.flatten_parameters()`, or handed to a function for its `model` parameter), or
  the keys of a dict the project saves beside an optimizer or model state (deserialising reads
  every entry: `status["best_epoch"]` of `{"best_epoch": e, "optimizer": optimizer}`); not a
  pickled vocabulary. A script or helper that names no device itself but restores a checkpoint
  into a model of a project class whose constructor moves it to CUDA (`model = VSEModel(opt)`,
  whose `__init__` does `if torch.cuda.is_available(): self.img_enc.cuda()`, here or in another
  module) runs on the GPU: its resume or `evalrank(path)` load is reported. A load inside an
  evaluation-only branch (`if args.test: ckpt = torch.load(args.test); ...; test(loader, model);
  sys.exit()`) is an evaluation load, also in a GPU-only project. The `args.gpu is None` side of a
  load whose other side maps to `cuda:{gpu}` is reported where the file offers a CPU run (the
  ImageNet example's `print("using CPU, this will be slow")`). A file whose own saves are host
  data still reports a load whose path is a parameter its calls fill with another file
  (`PSPNet(backbone_file="A0-train.pth")` in a demo that saves its converted model from the CPU).
  Not a function a later module-level definition of the same name replaces (nothing can call
  it, R5), nor any load of a single-process training script (its set-up helpers too: the
  pretrained initialisation of `init_basic_elems(args)`) in a project none of whose files has a
  CPU path (R2); a vendored CUDA kernel package that no module of the project imports does not
  make a project GPU-only.

Why it matters
  Tensors are restored onto the device they were saved from. A checkpoint written on
  `cuda:0` fails to load on a machine without CUDA ("Attempting to deserialize object on a
  CUDA device"), and on a multi-GPU machine every process loads onto GPU 0, crowding it.

Example
  device = "cuda" if torch.cuda.is_available() else "cpu"
  model = Net().to(device)
  model.load_state_dict(torch.load("ckpt.pt"))            # TW402

Fix
  `torch.load("ckpt.pt", map_location="cpu")` (then `load_state_dict` copies onto the model's
  device), or `map_location=device` for the current process's device.
"""

    def check(self, ctx: Context) -> Iterator[Finding]:
        calls = ctx.calls_to("torch.load")
        if "import *" in ctx.source and star_names(ctx).get("torch") == "torch":  # torch handed on by `from model import *`
            calls = [*calls, *(c for c in ctx.calls_named("load") if c not in calls and star_qualname(ctx, c.func) == "torch.load")]
        if not calls:
            return
        for call in calls:
            if argument(call, "map_location", 1) is not None or has_star_args(call):
                continue
            on_host = _host_script_restores_gpu_save(ctx, call) or _helper_restores_device_state(ctx, call) \
                or helper_reached_from_gpu(ctx, call)
            if not (on_host or gpu_evident_near(ctx, call) or _optimizer_state(ctx, call) or script_level_checkpoint(ctx, call)
                    or restores_self_moving_model(ctx, call)) \
                    or in_dead_function(ctx, call):
                continue  # (code nothing calls loads nothing)
            if not on_host and ((gpu_project_load(ctx, call) or _gpu_only_folder(ctx)) and not gpu_switch(ctx)
                                or pinned_gpu_script(ctx) or gpu_only_file(ctx)
                                or data_parallel_resume(ctx, call)) and not _gpu_machine_loads(ctx, call) \
                    or other_branch_maps(ctx, call):
                continue  # a script that only runs on a GPU; the GPU branch of a load whose CPU branch maps
            if (saves_on_host(ctx) and not passed_other_file(ctx, call) or checkpoint_facts(ctx.project)[0] or _host_keys(ctx, call)) \
                    and not reads_device_keys(ctx, call):
                continue  # reads back what this file (or project) saves from host data: .cpu() tensors, NumPy
            names = file_names(ctx, argument(call, "f", 0), call)
            if _saved_files_on_host(ctx, call, names) or _same_run_reload(ctx, call, names) \
                    or fresh_name(ctx, call) or _shipped_final_weights(ctx, call, names) or cached_in_branch(ctx, call) \
                    or host_fixture(ctx, call) or option_never_passed(ctx, call):
                continue  # a file the project writes without GPU tensors; what this run just wrote; a data cache
            yield ctx.finding(
                self.code, call,
                "torch.load without map_location restores tensors onto the GPU they were saved from",
                suggestion='pass map_location="cpu" (or the current device)',
                end_node=call.func,
            )


RULE = LoadWithoutMapLocation()
