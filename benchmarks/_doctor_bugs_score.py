"""Scores for ``benchmarks/doctor_bugs.py``: what each doctor report means for its script, and the tables.

A run is a dict-like record with ``kind`` (buggy/fixed/clean), ``id``, ``findings`` (dicts with
``code`` and ``severity``, in report order: errors, warnings, hints) and ``error`` (the harness's,
e.g. a timeout). Nothing here runs anything, so the scoring is tested on made-up reports.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

ALARM = ("error", "warning")
FOUND = ("found-first", "found")


def score_buggy(findings: list[dict[str, Any]], expected: list[str], also_ok: list[str] = ()) -> dict[str, Any]:
    """Classify a buggy twin's report (findings in report order: errors, warnings, hints)."""
    exp = set(expected)
    alarms = [f for f in findings if f["severity"] in ALARM]
    found = [f["code"] for f in alarms if f["code"] in exp]
    hints = [f["code"] for f in findings if f["severity"] == "hint" and f["code"] in exp]
    other = sorted({f["code"] for f in alarms if f["code"] not in exp and f["code"] not in also_ok})
    first = alarms[0]["code"] if alarms else None
    if not exp:
        status = "unmapped"
    elif found:
        status = "found-first" if first in exp else "found"
    elif hints:
        status = "hint-only"
    elif other:
        status = "wrong-cause"
    elif alarms:
        status = "symptom-only"  # only the pair's also_ok codes: true, but not the cause
    else:
        status = "missed"
    return {"status": status, "first": first, "other": other, "alarms": sorted({f["code"] for f in alarms})}


def score_quiet(findings: list[dict[str, Any]]) -> dict[str, Any]:
    """A fixed twin or clean script: every warning/error finding is a false alarm."""
    alarms = sorted({f["code"] for f in findings if f["severity"] in ALARM})
    return {"quiet": not alarms, "alarms": alarms}


def expected_codes(pair: dict[str, Any], classes: dict[str, Any], mapping: dict[str, list[str]]) -> list[str]:
    if pair["class"] in mapping:
        return mapping[pair["class"]]
    return pair.get("expected", classes[pair["class"]]["codes"])


def score(runs: list[Any], manifest: dict[str, Any], mapping: dict[str, list[str]]) -> dict[str, Any]:
    """Per pair, per class and overall results of a set of runs."""
    pairs = {p["id"]: p for p in manifest["pairs"]}
    per_pair: dict[str, dict[str, Any]] = {}
    clean: dict[str, dict[str, Any]] = {}
    for run in runs:
        if run.kind == "clean":
            ran = {"steps": getattr(run, "measured", {}).get("steps_run"), "failure": getattr(run, "failure", None)}
            clean[run.id] = {"error": run.error, **score_quiet(run.findings), **ran}
            continue
        pair = pairs[run.id]
        result = per_pair.setdefault(run.id, {"class": pair["class"], "tags": pair.get("tags", [])})
        if run.kind == "buggy":
            verdict = score_buggy(run.findings, expected_codes(pair, manifest["classes"], mapping), pair.get("also_ok", []))
            if run.error:
                verdict["status"] = "run-error"
            result["buggy"] = {**verdict, "error": run.error}
        else:
            result["fixed"] = {"error": run.error, "failure": getattr(run, "failure", None), **score_quiet(run.findings)}
    return {"pairs": per_pair, "clean": clean, "classes": _by_class(per_pair, manifest), "overall": _overall(per_pair, clean)}


def _by_class(per_pair: dict[str, dict[str, Any]], manifest: dict[str, Any]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for pid, result in per_pair.items():
        row = out.setdefault(result["class"], {"pairs": 0, "status": Counter(), "buggy_codes": Counter(),
                                               "fixed_runs": 0, "fixed_alarms": 0, "fixed_codes": Counter()})
        row["pairs"] += 1
        if "buggy" in result:
            row["status"][result["buggy"]["status"]] += 1
            row["buggy_codes"].update(result["buggy"]["alarms"])
        if "fixed" in result:
            row["fixed_runs"] += 1
            row["fixed_alarms"] += not result["fixed"]["quiet"] or bool(result["fixed"]["error"])
            row["fixed_codes"].update(result["fixed"]["alarms"])
    return {c: {**r, "status": dict(r["status"]), "buggy_codes": dict(r["buggy_codes"]), "fixed_codes": dict(r["fixed_codes"])}
            for c, r in sorted(out.items(), key=lambda kv: list(manifest["classes"]).index(kv[0]))}


def _overall(per_pair: dict[str, dict[str, Any]], clean: dict[str, dict[str, Any]]) -> dict[str, Any]:
    statuses = Counter(r["buggy"]["status"] for r in per_pair.values() if "buggy" in r)
    mapped = sum(n for s, n in statuses.items() if s != "unmapped")
    fixed = [r["fixed"] for r in per_pair.values() if "fixed" in r]
    alarm_codes = Counter(c for r in fixed for c in r["alarms"]) + Counter(c for r in clean.values() for c in r["alarms"])
    return {
        "buggy_runs": sum(statuses.values()), "mapped": mapped, "status": dict(statuses),
        "found": sum(statuses[s] for s in FOUND), "found_first": statuses["found-first"],
        "fixed_runs": len(fixed), "fixed_false_alarms": sum(not r["quiet"] for r in fixed),
        "fixed_run_errors": sum(bool(r["error"]) for r in fixed),
        "clean_runs": len(clean), "clean_false_alarms": sum(not r["quiet"] for r in clean.values()),
        "clean_run_errors": sum(bool(r["error"]) for r in clean.values()),
        "stopped": sorted([pid for pid, r in per_pair.items() if r.get("fixed", {}).get("failure")]
                          + [sid for sid, r in clean.items() if r.get("failure")]),
        "false_alarm_codes": dict(alarm_codes.most_common()),
    }


def render(result: dict[str, Any], header: str, notes: list[str]) -> str:
    lines = [header, ""]
    lines.append(f"{'class':22} {'pairs':>5} {'found':>5} {'first':>5} {'hint':>4} {'sympt':>5} {'wrong':>5} {'missed':>6}"
                 f" {'error':>5}  fixed FA  codes on buggy twins")
    unmapped = []
    for cls, row in result["classes"].items():
        st = row["status"]
        if st.get("unmapped"):
            unmapped.append(f"{cls} ({_codes(row['buggy_codes'])})")
        found = "-" if st.get("unmapped") else str(st.get("found-first", 0) + st.get("found", 0))
        lines.append(f"{cls:22} {row['pairs']:>5} {found:>5} {st.get('found-first', 0):>5} {st.get('hint-only', 0):>4} "
                     f"{st.get('symptom-only', 0):>5} {st.get('wrong-cause', 0):>5} {st.get('missed', 0):>6} {st.get('run-error', 0):>5}  "
                     f"{row['fixed_alarms']:>2}/{row['fixed_runs']:<5} {_codes(row['buggy_codes'])}")
    o = result["overall"]
    lines += ["", f"root cause found: {o['found']}/{o['mapped']} mapped buggy twins ({o['found_first']} as the first finding); "
              f"{o['status'].get('hint-only', 0)} only as a hint, {o['status'].get('symptom-only', 0)} only a symptom, "
              f"{o['status'].get('wrong-cause', 0)} wrong cause, "
              f"{o['status'].get('missed', 0)} missed, {o['status'].get('run-error', 0)} run errors"]
    lines.append(f"false alarms: fixed twins {o['fixed_false_alarms']}/{o['fixed_runs']}, clean public scripts "
                 f"{o['clean_false_alarms']}/{o['clean_runs']}; codes: {_codes(o['false_alarm_codes'])}")
    if o["stopped"]:
        lines.append("correct scripts that stopped with an error under the doctor: " + ", ".join(o["stopped"]))
    if unmapped:
        lines.append("unmapped classes (no catalog code given; --map CLASS=CODE scores them): " + "; ".join(unmapped))
    lines += ["", "per pair (buggy: status [codes] | fixed: codes):"]
    for pid, r in result["pairs"].items():
        b, f = r.get("buggy", {}), r.get("fixed", {})
        lines.append(f"  {pid:32} {b.get('status', '-'):12} [{' '.join(b.get('alarms', []))}]{' ' + b['error'] if b.get('error') else ''}"
                     f" | {' '.join(f.get('alarms', [])) or 'quiet'}{' ' + f['error'] if f.get('error') else ''}")
    if result["clean"]:
        lines += ["", "clean public scripts:"]
        for sid, r in result["clean"].items():
            stopped = f"; the script stopped: {r['failure'][:80]}" if r.get("failure") else ""
            ran = f" ({r.get('steps')} optimizer steps seen{stopped})"
            lines.append(f"  {sid:32} {' '.join(r['alarms']) or 'quiet'}{' ' + r['error'] if r['error'] else ran}")
    return "\n".join(lines + ([""] + notes if notes else []))


def _codes(counts: dict[str, int]) -> str:
    return ", ".join(f"{c}" + (f" x{n}" if n > 1 else "") for c, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))) or "-"


def render_plain(runs: list[Any], header: str) -> str:
    """``--plain``: each pair's twins side by side (exit status and final line), then the public scripts."""
    by = {(r.kind, r.id): r for r in runs}
    lines = [header, "", f"{'pair':32} {'buggy':44} fixed"]

    def cell(run: Any) -> str:
        if run is None:
            return "-"
        if run.error:
            return run.error
        if run.exit_code:
            tail = run.output_tail.strip().splitlines()
            return f"exit {run.exit_code} ({tail[-1][:60] if tail else ''})"
        return run.measured.get("final", "") or "exit 0"

    for pid in dict.fromkeys(r.id for r in runs if r.kind != "clean"):
        lines.append(f"{pid:32} {cell(by.get(('buggy', pid))):44} {cell(by.get(('fixed', pid)))}")
    for r in runs:
        if r.kind == "clean":
            lines.append(f"{r.id:32} {cell(r)}")
    return "\n".join(lines)
