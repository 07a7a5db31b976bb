"""Models: which classes are ``nn.Module`` subclasses and which expressions are evidently
module instances (built from one here, used as one, or named ``model``/``net``)."""

from __future__ import annotations

import ast
import re

from torchwise.lint.engine import AST, Context, last_name, root_name


_MODEL_NAME = re.compile(r"^_?(model|net|network|[a-z0-9_]+_model|[a-z0-9_]+_net|model_[a-z0-9_]+)$")


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


def is_model_name(name: str | None) -> bool:
    if not name or not _MODEL_NAME.match(name):
        return False
    return name.lstrip("_").split("_", 1)[0] not in _FACTORY_VERBS


def is_module_class(ctx: Context, built: str | None) -> bool:
    """Is this (canonical or ``local:``) class name an ``nn.Module`` subclass?"""
    if built is None:
        return False
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
    if built is None and expr.__class__ in (ast.Name, ast.Attribute) and ctx.text(expr) in _used_as_module(ctx):
        return True  # netD.parameters() handed to an optimizer, netD.train(): a module whatever its name
    if built is None and expr.__class__ is ast.Attribute and root_name(expr) is not None and root_name(expr).id == "self":
        built = _self_attr_from_locals(ctx, expr, use or expr)
    if built is not None and built.split(".", 1)[0] in _OTHER_FRAMEWORKS:
        return False  # an OpenCV/ONNX Runtime/TensorFlow... model named like a torch one
    if by_name and expr.__class__ in (ast.Name, ast.Attribute):
        if expr.__class__ is ast.Name:
            b = ctx.binding_at(expr.id, use or expr)
            if b is not None and b.kind in ("def", "class", "import"):
                return False  # a function or class named like a model, not an instance
        return is_model_name(last_name(expr))
    return False
