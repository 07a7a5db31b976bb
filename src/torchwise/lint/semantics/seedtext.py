"""Seeding calls as they are written, read as text: shared by the project pass (:mod:`torchwise.lint.project.text`)
and the per-script seed analysis (:mod:`.runseeds`)."""

from __future__ import annotations

from torchwise.lint.engine.lazyre import lazy_compile

# family -> (a substring to test first, the call's pattern); numpy under its usual alias too
SEEDS = {
    "random": ("random.seed(", lazy_compile(r"(?<![\w.])random\.seed\(")),
    "numpy": ("random.seed(", lazy_compile(r"\b(?:np|numpy)\.random\.seed\(")),
    "torch": ("manual_seed", lazy_compile(r"\btorch\.(?:cuda\.)?manual_seed(?:_all)?\(")),
}
# helpers that seed every generator (frameworks' and the usual hand-written ones)
SEED_HELPERS = ("seed_everything(", "set_seed(", "set_random_seed(", "fix_seed(", "setup_seed(", "seed_all(", "set_seeds(",
                "init_seeds(", "fix_seeds(", "seed_torch(", "set_global_seed(", "random_seed(", "init_seed(")
