"""The lint rules: one module per catalog code, each defining ``RULE`` (a :class:`Rule`).

``all_rules()`` returns them in code order; ``torchwise rule CODE`` prints a rule's ``doc``.
Importing this package imports only the standard library and torchwise's lint engine.
"""

from __future__ import annotations

import importlib

from torchwise.lint.rule import Rule

RULE_MODULES: tuple[str, ...] = (
    "tw101_running_loss",
    "tw102_softmax_cross_entropy",
    "tw103_forward_call",
    "tw104_eval_no_grad",
    "tw105_log_softmax",
    "tw107_view_after_transpose",
    "tw108_backward_hook",
    "tw109_batchnorm_freeze",
    "tw110_missing_zero_grad",
    "tw111_init_bias",
    "tw116_module_prefix",
    "tw201_dataparallel",
    "tw202_num_workers",
    "tw203_pin_memory",
    "tw204_non_blocking",
    "tw205_create_on_device",
    "tw206_tensor_from_numpy",
    "tw207_host_sync",
    "tw208_set_to_none",
    "tw209_conv_bias_bn",
    "tw213_cudnn_benchmark_varying",
    "tw214_jit_script",
    "tw215_ddp_no_sync",
    "tw217_empty_cache",
    "tw218_half_model",
    "tw219_default_tensor_type",
    "tw220_cuda_amp",
    "tw301_seed_all",
    "tw302_benchmark_deterministic",
    "tw303_manual_seed_all",
    "tw305_deterministic_algorithms",
    "tw401_weights_only",
    "tw402_map_location",
    "tw403_hardcoded_cuda",
    "tw404_cuda_visible_devices",
    "tw405_spawn_master_addr",
    "tw406_set_epoch",
    "tw501_removed_api",
    "tw502_deprecated_api",
    "tw503_require_grad_typo",
    "tw504_checkpoint_reentrant",
    "tw505_non_public_api",
    "tw506_log1p",
    "tw507_expm1",
    "tw508_logsumexp",
    "tw509_torchvision_pretrained",
    "tw510_v2_to_tensor",
    "tw511_torchvision_module_import",
    "tw512_unwaited_collective",
    "tw513_tensor_constructor",
    "tw514_library_in_tests",
)

_CACHE: list[Rule] | None = None


def all_rules() -> list[Rule]:
    """Every rule, one object per code, sorted by code."""
    global _CACHE
    if _CACHE is None:
        found = []
        for name in RULE_MODULES:
            module = importlib.import_module(f"{__name__}.{name}")
            found.append(module.RULE)
        found.sort(key=lambda r: r.code)
        _CACHE = found
    return list(_CACHE)


def get_rule(code: str) -> Rule:
    """The rule for ``code`` (case-insensitive); raises LookupError when lint has none."""
    key = str(code).strip().upper()
    for rule in all_rules():
        if rule.code == key:
            return rule
    raise LookupError(f"no lint rule for {code!r}")


__all__ = ["Rule", "RULE_MODULES", "all_rules", "get_rule"]
