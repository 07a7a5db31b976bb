"""The recall corpus, round 25 part A (TW207): classes sets 39-40 showed on their first look - each
written in our own words and reduced to its shape, with look-alikes that must stay quiet.
``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW207 a log interval of 1 joined by `or`
# An LLM trainer logs under `step % args.log_interval == 0 or step == last` with the option's default 1:
# the `or` runs the branch whenever the interval test holds, which is every step.
FIND += [
    Shape("TW207", "logging block under `% args.log_interval == 0 or step == total`, default 1", d("""
        import argparse
        import torch
        def fit(model, opt, loader, args):
            total = len(loader)
            for step, (x, y) in enumerate(loader, 1):
                loss = model(x.to(args.device), y.to(args.device))
                loss.backward(); opt.step(); opt.zero_grad()
                if step % args.log_interval == 0 or step == total:
                    print(step, loss.item())
        if __name__ == "__main__":
            p = argparse.ArgumentParser()
            p.add_argument("--log_interval", type=int, default=1)
            fit(None, None, [], p.parse_args())
    """), 9),
    Shape("TW207", "print-every option of 1 or-ed with the last batch's test", d("""
        import argparse
        import torch
        parser = argparse.ArgumentParser()
        parser.add_argument("--print-every", type=int, default=1)
        args = parser.parse_args()
        def run(net, opt, batches):
            for it, (a, b) in enumerate(batches):
                out = net(a.cuda())
                err = torch.nn.functional.mse_loss(out, b.cuda())
                opt.zero_grad(); err.backward(); opt.step()
                if (it + 1) % args.print_every == 0 or it == len(batches) - 1:
                    r = err.item()
                    print(r)
    """), 12),
]
QUIET += [
    Shape("TW207", "look-alike: the same `or` test with an interval of 50 by default", d("""
        import argparse
        import torch
        def fit(model, opt, loader, args):
            total = len(loader)
            for step, (x, y) in enumerate(loader, 1):
                loss = model(x.to(args.device), y.to(args.device))
                loss.backward(); opt.step(); opt.zero_grad()
                if step % args.log_interval == 0 or step == total:
                    print(step, loss.item())
        if __name__ == "__main__":
            p = argparse.ArgumentParser()
            p.add_argument("--log_interval", type=int, default=50)
            fit(None, None, [], p.parse_args())
    """)),
]

# ------------------------------------------------------------- TW207 an opt-in diagnostic joined by `and`
# A PPO trainer prints ratio statistics only under `if args.debug_xxx and epoch == 0 and i == 0:`
# (a store_true switch): off in a normal run.
QUIET += [
    Shape("TW207", "opt-in debug switch and-ed with first-minibatch tests", d("""
        import argparse
        import torch
        def update(policy, opt, batch, args):
            for k in range(args.ppo_epochs):
                for i in range(0, 64, 16):
                    logp = policy(batch[i:i + 16].cuda())
                    ratio = torch.exp(logp - logp.detach())
                    if args.debug_ratio and k == 0 and i == 0:
                        print(ratio.max().item(), ratio.min().item())
                    loss = -ratio.mean()
                    opt.zero_grad(); loss.backward(); opt.step()
        p = argparse.ArgumentParser()
        p.add_argument("--debug_ratio", action="store_true")
    """)),
    Shape("TW207", "a config's debug switch first in an `and`", d("""
        import torch
        def train(cfg, model, opt, loader):
            for x in loader:
                loss = model(x.to("cuda")).mean()
                opt.zero_grad(); loss.backward(); opt.step()
                if cfg.debug_grads and cfg.rank == 0:
                    print(loss.item())
    """)),
]

# ------------------------------------------------------------- TW207 an algorithm's stop through a flag (R9)
# A PPO update sets a flag when the approximate KL passes its target and leaves the epoch loop
# on the flag (after finishing the pass): the decision needs the KL on the host.
QUIET += [
    Shape("TW207", "KL early stop written into a flag that a later `if stop: break` reads", d("""
        import torch
        def ppo_update(actor, opt, loader, target_kl, epochs):
            stop = False
            for epoch in range(epochs):
                if stop:
                    break
                for obs, old_logp, adv in loader:
                    logp = actor(obs.cuda())
                    ratio = torch.exp(logp - old_logp.cuda())
                    loss = -(ratio * adv.cuda()).mean()
                    opt.zero_grad(); loss.backward(); opt.step()
                    approx_kl = (old_logp.cuda() - logp).mean()
                    if approx_kl > 1.5 * target_kl:
                        stop = True
    """)),
    Shape("TW207", "the same stop as a `while` flag cleared by the KL test", d("""
        import torch
        def ppo_update(actor, opt, loader, target_kl):
            going = True
            while going:
                for obs, old_logp, adv in loader:
                    logp = actor(obs.cuda())
                    loss = -(torch.exp(logp - old_logp.cuda()) * adv.cuda()).mean()
                    opt.zero_grad(); loss.backward(); opt.step()
                    if (old_logp.cuda() - logp).mean() > target_kl:
                        going = False
    """)),
]
FIND += [
    Shape("TW207", "a flag set by a tensor test that no loop stops on (an input check kept for later)", d("""
        import torch
        def fit(model, opt, loader):
            bad = False
            for x in loader:
                loss = model(x.cuda()).mean()
                opt.zero_grad(); loss.backward(); opt.step()
                if loss > 1e4:
                    bad = True
            return bad
    """), 7),
]

# ------------------------------------------------------------- TW207 generation called by a training step (R1, R9)
# A GRPO trainer asks a rollout engine of another module for completions every step; the engine
# turns the prompt ids into token lists for an inference server: decoding needs them on the host.
PROJECTS += [
    ProjectShape("TW207", "look-alike: a rollout engine's token lists for an inference server", {
        "engine.py": d("""
            import requests
            class HttpEngine:
                def rollout(self, prompt_ids, mask, n):
                    ids = [row[m.bool()].tolist() for row, m in zip(prompt_ids, mask)]
                    return requests.post("http://localhost:8000/generate", json={"ids": ids, "n": n}).json()
        """),
        "train.py": d("""
            import torch
            from engine import HttpEngine
            def train(model, opt, loader, device):
                engine = HttpEngine()
                for batch in loader:
                    ids = batch["ids"].to(device)
                    out = engine.rollout(ids, batch["mask"].to(device), 4)
                    loss = model(ids, torch.tensor(out["rewards"], device=device)).mean()
                    opt.zero_grad(); loss.backward(); opt.step()
        """),
    }),
]
