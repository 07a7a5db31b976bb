"""Override pairs that no library calls (for :mod:`.methodrefs`): a method a project's base class
declares (``def full_rank(self, u): raise NotImplementedError``) and its subclasses override is an
interface; a ``def`` of the same name in the same hierarchy is a use of it only where code outside
the project may call it by that name - a library base class that calls its own hooks
(``nn.Linear`` calls ``reset_parameters``, Lightning ``training_step``, a ``gym.Env``'s wrappers
``step``). Where every base of the hierarchy is a class of the project, ``object``, ``ABC`` or
``nn.Module`` (and the name is none of ``nn.Module``'s own methods, which torch calls itself:
``train``, ``extra_repr``, ``_apply``), only the project calls it, and a name no file mentions
(no module, test, notebook, config or README example ``model.infer(...)``) is called by nothing (ruling R26: code no script, module or notebook calls is dead). Text only,
once per project."""

from __future__ import annotations

import re

from torchwise.lint.engine import Context
from torchwise.lint.engine.lazyre import lazy_compile
from torchwise.lint.semantics.deadmodules import reference_texts

_CLASS = lazy_compile(r"^[ \t]*class[ \t]+(\w+)[ \t]*(?:\(([^)]*)\))?[ \t]*:", re.M)

# bases that call no method of their subclasses by a name the project chose
_INERT_BASES = frozenset({"object", "Module", "ABC", "ABCMeta", "Generic"})

# nn.Module's own methods (torch calls some on every submodule: `model.train()`, `.cuda()`, printing)
_MODULE_METHODS = frozenset({
    "forward", "train", "eval", "extra_repr", "_apply", "apply", "cuda", "cpu", "to", "type", "float", "double", "half",
    "bfloat16", "to_empty", "state_dict", "load_state_dict", "_load_from_state_dict", "_save_to_state_dict",
    "parameters", "named_parameters", "buffers", "named_buffers", "children", "named_children", "modules",
    "named_modules", "zero_grad", "share_memory", "requires_grad_", "register_buffer", "register_parameter",
    "add_module", "register_module", "get_submodule", "get_parameter", "get_buffer", "get_extra_state",
    "set_extra_state", "_get_name", "_named_members", "_replicate_for_data_parallel", "compile", "reset_parameters",
    "_reset_parameters", "_init_weights", "_check_input_dim", "_conv_forward", "ipu", "xpu", "mtia"})


def class_bases(ctx: Context) -> dict[str, set[str]]:
    """Every class of the project's Python files by name, with the last part of each base's name."""
    table = ctx.project.answers.get("owninterfaces:classes")
    if table is None:
        table = {}
        for _, text in ctx.project.files:
            if "class" in text:
                for m in _CLASS.finditer(text):
                    bases = {b.strip().split("=")[-1].strip().split(".")[-1].split("[")[0] for b in (m.group(2) or "").split(",")}
                    table.setdefault(m.group(1), set()).update(b for b in bases if b and b.isidentifier())
        ctx.project.answers["owninterfaces:classes"] = table
    return table


def project_only(ctx: Context, name: str, *classes: str) -> bool:
    """Every class above ``classes`` (and they themselves) is the project's own or an inert base
    (``object``, ``ABC``, ``nn.Module``), and ``name`` is no method ``nn.Module`` has: no library
    calls ``name`` on them."""
    if name in _MODULE_METHODS or name.startswith(("_", "on_")) or name in ctx.project.test_calls or _called_in_docs(ctx, name):
        return False  # (a test calls it, or the README shows users calling it: `model.infer(...)`)
    key = ("owninterfaces", name, classes)
    found = ctx.project.answers.get(key)
    if found is None:
        table = class_bases(ctx)
        todo, seen, found = list(classes), set(), True
        while todo and found:
            cls = todo.pop()
            if cls in seen:
                continue
            seen.add(cls)
            if cls in table:
                todo.extend(table[cls])
            elif cls not in _INERT_BASES:
                found = False  # a library's class (nn.Linear, LightningModule, gym.Env, a metaclass keyword)
        ctx.project.answers[key] = found
    return found


def _called_in_docs(ctx: Context, name: str) -> bool:
    """A text file of the project (a README's usage example, a config, a notebook) calls
    ``.name(``; or those files could not all be read."""
    refs = reference_texts(ctx)
    if refs is None:
        return True
    call = "." + name + "("
    return any(call in text for _, text in refs)
