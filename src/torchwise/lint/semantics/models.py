"""Models: which classes are ``nn.Module`` subclasses and which expressions are evidently
module instances (built from one here, used as one, or named ``model``/``net``)."""

from __future__ import annotations

import ast
import re

from torchwise.lint.engine import AST, Context, last_name, root_name
from torchwise.lint.engine.lazyre import lazy_compile
from torchwise.lint.semantics.projectcode import def_bodies
from torchwise.lint.semantics.steps import is_eval_name
from torchwise.lint.semantics.namedmethods import named_class_method_without_grad


_MODEL_NAME = lazy_compile(r"^_?(model|net|network|[a-z0-9_]+_model|[a-z0-9_]+_net|model_[a-z0-9_]+)$")


# first words that make ``create_model``/``unwrap_model`` a function returning a model, not one
_FACTORY_VERBS = frozenset({
    "create", "build", "get", "load", "make", "unwrap", "init", "initialize", "setup", "prepare", "wrap",
    "convert", "export", "save", "freeze", "compile", "fuse", "copy", "to", "download", "restore", "select",
    "construct", "instantiate", "resume", "apply", "replace", "print", "count", "check", "is", "has",
})


# top-level packages whose "models" and "nets" are not torch modules
_OTHER_FRAMEWORKS = frozenset({
    "cv2", "onnxruntime", "onnx", "tensorflow", "tf", "keras", "jax", "flax", "openvino", "tensorrt", "trt",
    "coremltools", "ct", "paddle", "sklearn", "xgboost", "lightgbm", "tflite_runtime", "mxnet", "caffe",
})


_MODULE_ONLY_METHODS = frozenset({"parameters", "named_parameters", "named_modules", "modules", "children",
                                  "load_state_dict", "register_forward_hook", "register_buffer"})


def _used_as_module(ctx: Context) -> set[str]:
    """Expressions (as written) on which the file calls methods only modules have."""
    found = ctx._cache.get("sem:used_as_module")
    if found is None:
        found = set()
        for call in ctx.calls_named(*_MODULE_ONLY_METHODS):
            func = call.func
            if func.__class__ is ast.Attribute and func.value.__class__ in (ast.Name, ast.Attribute) and ctx.qualname(func) is None:
                found.add(ctx.text(func.value))
        ctx._cache["sem:used_as_module"] = found
    return found


def _self_attr_from_locals(ctx: Context, expr: ast.Attribute, use: AST) -> str | None:
    """``self.net`` never assigned as such, but a method binds a local ``net`` and then copies its
    locals onto the instance (``self.__dict__.update(locals())``): what built that local."""
    cls = ctx.class_of(use)
    if cls is None or ctx.self_attr_values(cls, expr.attr):
        return None
    kinds = set()
    for item in cls.body:
        if item.__class__ in (ast.FunctionDef, ast.AsyncFunctionDef):
            for b in ctx.bindings(item).get(expr.attr, ()):
                if b.kind == "assign" and b.value is not None:
                    kinds.add(ctx.constructed_from(b.value, b.node, 0))
    return kinds.pop() if len(kinds) == 1 else None


# wrappers that are modules themselves (their calls run the wrapped module's forward)
_WRAPPERS = frozenset({"torch.nn.parallel.DistributedDataParallel", "torch.nn.DataParallel",
                       "torch.distributed.fsdp.FullyShardedDataParallel"})


# deep-learning frameworks whose scripts name their networks `net`/`model` too
_OTHER_DL = frozenset({"caffe", "tensorflow", "keras", "jax", "flax", "mxnet", "paddle", "chainer", "theano",
                       "lasagne", "onnxruntime", "tensorrt", "openvino", "tflite_runtime", "coremltools"})


def _other_framework_file(ctx: Context) -> bool:
    """The file imports another framework (``import caffe``) and nothing of torch: its ``net`` is
    that framework's (``app.clf.net.forward()`` of a Caffe classifier), not a torch module."""
    found = ctx._cache.get("sem:other-dl")
    if found is None:
        roots = {q.split(".", 1)[0] for q in ctx.imports.values()}
        found = ctx._cache["sem:other-dl"] = bool(roots & _OTHER_DL) and "torch" not in roots
    return found


def is_model_name(name: str | None) -> bool:
    if not name or not _MODEL_NAME.match(name):
        return False
    return name.lstrip("_").split("_", 1)[0] not in _FACTORY_VERBS


def is_module_class(ctx: Context, built: str | None) -> bool:
    """Is this (canonical or ``local:``) class name an ``nn.Module`` subclass?"""
    if built is None:
        return False
    if built in _WRAPPERS:
        return True
    if built.startswith("torch.nn."):
        last = built.rsplit(".", 1)[1]
        return built.count(".") == 2 and last[:1].isupper() and not last.endswith("Loss") and last != "Parameter"
    if built.startswith(("torchvision.models.", "timm.create_model")):
        return True
    if built.startswith("local:"):
        bases = ctx.local_class_bases(built[6:])
        return any(b.startswith("torch.nn.") for b in bases)
    return False


def is_module_instance(ctx: Context, expr: AST | None, use: AST | None = None, by_name: bool = True) -> bool:
    """Is ``expr`` evidently an ``nn.Module`` (built from one here, or named ``model``/``net``)?"""
    if expr is None:
        return False
    built = ctx.constructed_from(expr, use)
    if is_module_class(ctx, built):
        return True
    imported = built is not None and not built.startswith(("torch.", "local:")) and built.split(".", 1)[0] not in _OTHER_FRAMEWORKS
    if (built is None or imported) and expr.__class__ in (ast.Name, ast.Attribute) and ctx.text(expr) in _used_as_module(ctx):
        return True  # netD.parameters() handed to an optimizer, mpd.train(): a module whatever its name or class
    if built is None and expr.__class__ is ast.Attribute and root_name(expr) is not None and root_name(expr).id == "self":
        built = _self_attr_from_locals(ctx, expr, use or expr)
    if built is not None and built.split(".", 1)[0] in _OTHER_FRAMEWORKS:
        return False  # an OpenCV/ONNX Runtime/TensorFlow... model named like a torch one
    if by_name and expr.__class__ in (ast.Name, ast.Attribute) and not _other_framework_file(ctx):
        if expr.__class__ is ast.Name:
            b = ctx.binding_at(expr.id, use or expr)
            if b is not None and b.kind in ("def", "class", "import"):
                return False  # a function or class named like a model, not an instance
            if b is None and _star_imported_class(ctx, expr.id):
                return False  # `model_whale(...)` with `from models import *`: the project's class, built here
        elif _own_method(ctx, expr, use or expr):
            return False  # `self.model_forward(img)`: a method of the class, named like a model
        return is_model_name(last_name(expr))
    return False


def _own_method(ctx: Context, expr: AST, use: AST) -> bool:
    """``self.name`` where the class around ``use`` defines a method ``name``."""
    if expr.__class__ is not ast.Attribute or expr.value.__class__ is not ast.Name or expr.value.id != "self":
        return False
    klass = next((a for a in ctx.ancestors(use) if a.__class__ is ast.ClassDef), None)
    return klass is not None and any(m.__class__ in (ast.FunctionDef, ast.AsyncFunctionDef) and m.name == expr.attr
                                     for m in klass.body)


def _star_imported_class(ctx: Context, name: str) -> bool:
    """``name`` is bound by none of the file's statements, the file star-imports (``from models import
    *``) and a file of the project defines ``class name``: a class, not an instance."""
    if "import *" not in ctx.source or not ctx.project.files:
        return False
    head = re.compile(rf"^[ \t]*class[ \t]+{re.escape(name)}\b", re.M)
    return any(f"class {name}" in text and head.search(text) is not None for _, text in ctx.project.files)


# methods of a module that do not run its forward pass
_NOT_FORWARD = frozenset({
    "eval", "train", "to", "cuda", "cpu", "half", "float", "double", "bfloat16", "state_dict", "load_state_dict",
    "parameters", "named_parameters", "modules", "named_modules", "children", "named_children", "buffers",
    "named_buffers", "apply", "zero_grad", "requires_grad_", "share_memory", "extra_repr", "type", "register_buffer",
    "add_module", "get_submodule", "get_parameter", "compile", "reset_parameters", "init_weights", "tie_weights",
})
_NOT_FORWARD_PREFIXES = ("save", "load", "register", "print", "set_", "get_num", "num_", "named_", "init", "reset", "_")
# methods named for running the model (the class is not in view: imported)
_FORWARD_VERBS = frozenset({
    "generate", "sample", "predict", "act", "set_forward", "get_action", "get_value", "get_action_and_value", "evaluate_actions",
    "infer", "inference", "encode", "decode", "embed", "forward_features", "extract_features", "extract_feature", "reconstruct",
    "denoise", "translate", "detect", "segment", "classify",
    # scoring methods: the network's (log-)likelihood of the input
    "log_prob", "log_probs", "log_likelihood", "nll", "logits", "predict_proba", "perplexity",
})
FORWARD_VERBS = _FORWARD_VERBS  # (read by hostresults)
# libraries whose models' generate()/predict() turn autograd off themselves
_LIBRARY_MODELS = ("transformers.", "diffusers.", "timm.", "torchvision.", "open_clip.", "sentence_transformers.",
                   "ultralytics.", "peft.",
                   "stable_baselines3.", "sb3_contrib.")  # (an agent's predict() runs its policy under no_grad itself)


def _local_method(ctx: Context, class_name: str, name: str, depth: int = 4) -> ast.FunctionDef | None:
    klass = ctx.local_classes.get(class_name)
    if klass is None or depth <= 0:
        return None
    for item in klass.body:
        if item.__class__ in (ast.FunctionDef, ast.AsyncFunctionDef) and item.name == name:
            return item
    for base in klass.bases:
        if base.__class__ is ast.Name:
            found = _local_method(ctx, base.id, name, depth - 1)
            if found is not None:
                return found
    return None


def _calls_submodule(klass: ast.ClassDef | None, method: ast.AST) -> bool:
    """``self(x)``, ``self.forward(x)``, ``self.actor(x)`` (an attribute, not a method, of the class)."""
    methods = {i.name for i in klass.body if i.__class__ in (ast.FunctionDef, ast.AsyncFunctionDef)} if klass else set()
    for node in ast.walk(method):
        if node.__class__ is not ast.Call:
            continue
        func = node.func
        if func.__class__ is ast.Name and func.id == "self":
            return True
        if func.__class__ is ast.Attribute and func.value.__class__ is ast.Name and func.value.id == "self":
            if func.attr == "forward" or func.attr not in methods:
                return True
    return False


def runs_forward(ctx: Context, func: ast.Attribute, call: ast.Call) -> bool:
    """Does the method call ``func(...)`` (``agent.get_action_and_value(x)``, ``model.generate(ids)``)
    run the module's forward pass with autograd as the caller left it? For a class of this file,
    read the method (a ``no_grad`` decorator says no); for an imported one, go by its name, unless
    the project decorates a method of that name with ``no_grad`` or a library's model is known to,
    or every method of that name in the project classes this file mentions runs under no_grad."""
    name = func.attr
    if name in _NOT_FORWARD or name.startswith(_NOT_FORWARD_PREFIXES) and name != "set_forward":
        return False  # (few-shot models name their forward over an episode's set `set_forward`)
    built = ctx.constructed_from(func.value, call)
    if built is not None and built.startswith("local:"):
        method = _local_method(ctx, built[6:], name)
        if method is None or any(last_name(d) in ("no_grad", "inference_mode") for d in method.decorator_list):
            return False
        return _calls_submodule(ctx.parent(method) if ctx.parent(method).__class__ is ast.ClassDef else None, method)
    if built is not None and built.startswith(_LIBRARY_MODELS):
        return False
    return (name in _FORWARD_VERBS or name.startswith("forward_")) and name not in ctx.project.no_grad_functions \
        and not _project_no_grad_bodies(ctx, name) and not named_class_method_without_grad(ctx, name)


def _project_no_grad_bodies(ctx: Context, name: str) -> bool:
    """Every ``def name(`` of the project runs its work under ``with torch.no_grad():`` (or
    inference_mode, or hands it to another object's ``name()``) and backpropagates nothing (a VAE's ``sample()`` that decodes under no_grad):
    calling it needs no grad switch of the caller's."""
    key = ("models:no-grad-body", name)
    found = ctx.project.answers.get(key)
    if found is None:
        needle = f"def {name}("
        bodies = [b for _, text in ctx.project.files if needle in text for b in def_bodies(text, name)]
        found = bool(bodies) and all(("no_grad()" in b or "inference_mode()" in b or f".{name}(" in b) and "backward(" not in b
                                     for b in bodies)  # (or it delegates to another object's method of that name)
        ctx.project.answers[key] = found
    return found


def helper_runs(ctx: Context, scope: AST, call: ast.Call, receivers: set[str]) -> bool:
    """``self._process_one_batch(...)`` called after ``self.model.eval()``: a method of the same
    class (not a module class) that calls one of ``receivers`` and switches autograd neither off
    nor on itself (no ``no_grad``/``set_grad_enabled``/``inference_mode``/``backward``) and is not
    an evaluation scope of its own (then its forward pass is reported there, once)."""
    func = call.func
    if func.__class__ is not ast.Attribute or func.value.__class__ is not ast.Name or func.value.id != "self":
        return False
    klass = ctx.parent(scope)
    if klass.__class__ is not ast.ClassDef:
        return False
    method = next((m for m in klass.body if m.__class__ in (ast.FunctionDef, ast.AsyncFunctionDef)
                   and m.name == func.attr and m is not scope), None)
    if method is None or is_eval_name(method.name):
        return False  # a helper named for evaluation (_predict_batch) is checked, and reported, itself
    text = ctx.text(method)
    if ".eval()" in text:
        return False  # so is one that switches to eval mode itself
    if any(w in text for w in ("no_grad", "set_grad_enabled", "inference_mode", "enable_grad", "backward")):
        return False
    return any(n.__class__ is ast.Call and ctx.text(n.func) in receivers for n in ast.walk(method))
