"""The utilities the training tips write by hand: environment and GPU report (``env``), seeding
(``seed``), devices and threads (``device``), memory (``memory``), checkpoints (``checkpoint``),
model summaries (``summary``), hooks (``hooks``), layer helpers (``layers``), per-sample gradients
(``per_sample``), padding collate (``collate``), conversions (``convert``), batch handling
(``batch``), label checks (``labels``) and non-finite value search (``nonfinite``).

Each is a module of its own, imported when used; the most used functions are also exported from
``torchwise`` itself (``torchwise.seed_everything``...).
"""
