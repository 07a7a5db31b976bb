"""Small analyses of lint's semantics that a read of rounds 21-24 found wrong: each test fails on
the code before the fix."""

from __future__ import annotations

from torchwise.lint.project.gpucount import gpu_count_gate
from torchwise.lint.semantics.runseeds import _defines_seed_function


def test_gpu_count_gate_reads_an_upper_case_count():
    # the regex is case-insensitive; its cheap pre-check must be too
    assert gpu_count_gate("if NGPU > 0:\n    net = net.cuda()\n")
    assert gpu_count_gate("if args.ngpu > 0:\n    net.cuda()\n")
    assert not gpu_count_gate("if args.ngpu > 1:\n    net = nn.DataParallel(net)\n")


def test_seed_helpers_are_found_by_a_def_at_the_start_of_a_line():
    assert _defines_seed_function("import random\n\ndef set_seed(s):\n    random.seed(s)\n")
    assert _defines_seed_function("class A:\n    async def seed_everything(self):\n        pass\n")
    # prose and other words holding "def": no helper that seeds
    assert not _defines_seed_function('HELP = "undef seed(x) is not defined"\n')
    assert not _defines_seed_function("def train(x):\n    return x  # seed(0) was removed\n")


def test_cpu_options_read_every_flag_and_the_whole_call():
    from torchwise.lint.semantics.cpuoptions import explicit_cpu_option, option_calls

    # a short flag before the long one, and a help text with brackets before the default
    assert explicit_cpu_option("p.add_argument('-c', '--cpu', action='store_true')\n")
    assert explicit_cpu_option("p.add_argument('--device', help='device (cuda/cpu)', default='cuda')\n")
    assert not explicit_cpu_option("p.add_argument('--device', default=0, help='GPU id (0, 1...)')\n")
    assert [flags for flags, _ in option_calls("p.add_argument('-j', '--workers', default=4)\n")] == [("-j", "--workers")]
