"""The `check` report: a short text summary for people, and one stable JSON document for tools."""

from __future__ import annotations

import json
import math
import re
from typing import Any, TextIO

from trainwatch.engine import Engine
from trainwatch.model import _jsonable
from trainwatch.plans import latest
from trainwatch.rules.base import SourceState
from trainwatch.runconfig import RunConfig
from trainwatch.runconfig.fit import Given, topics
from trainwatch.session import SourceInfo
from trainwatch.task import TASK_NAMES, TASK_PRESET
from trainwatch.textsafe import plain

KEY_METRICS = ("loss", "eval_loss", "grad_norm", "lr", "epoch", "tokens_per_sec", "mfu", "loss_scale",
               "reward", "reward_std", "kl", "entropy")
JUDGED = re.compile(r"loss|acc|reward|map|err|perplex|ppl|bleu|rouge|f1|wer|score", re.I)
"""Metric names that say how training went. A log with none of them (progress only, a summary line)
and no finding is unknown, not healthy: nothing in it was judged."""
SCHEMA_VERSION = 1
STATUS = {0: "ok", 1: "warning", 2: "critical", 3: "unknown"}


def judged(engine: Engine, name: str) -> bool:
    """Whether a metric says how training went: a loss-like name, or any whose direction the quality
    table knows (a Dice, an AP, a fitness): a log whose numbers were read and judged is not unknown."""
    return bool(JUDGED.search(name)) or engine.quality(name) is not None


def exit_code(engine: Engine) -> int:
    worst = engine.worst()
    return int(worst) if worst is not None else 0


def _fmt(v: float) -> str:
    if not math.isfinite(v):
        return "nan" if v != v else ("inf" if v > 0 else "-inf")
    if v != 0 and (abs(v) < 1e-3 or abs(v) >= 1e5):
        return f"{v:.3g}"
    return f"{v:.4g}"


def metrics_of(engine: Engine, source: str) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for series in engine.store:
        if series.source != source:
            continue
        newest = series.newest()
        finite = series.newest_finite() if newest and not math.isfinite(newest[1]) else None
        out[series.name] = {
            "last": newest[1] if newest else None,
            "last_step": newest[0] if newest else None,
            "min": series.minimum if series.count > series.nan_count + series.inf_count else None,
            "max": series.maximum if series.count > series.nan_count + series.inf_count else None,
            "count": series.count,
            "nan": series.nan_count,
            "inf": series.inf_count,
        }
        if finite is not None:  # the last value is NaN/Inf: where the finite ones stopped
            out[series.name]["last_finite"], out[series.name]["last_finite_step"] = finite[1], finite[0]
    return out


def document(engine: Engine, sources: list[SourceInfo], preset: str, preset_auto: bool) -> dict[str, Any]:
    """The JSON report; its fields are documented in docs/usage.md and only ever grow."""
    code = exit_code(engine)
    alerts = engine.alerts(inhibited=False)  # what a live follower was told; echoes are listed apart
    if code == 0 and not alerts and not any(judged(engine, series.name) for series in engine.store):
        code = 3  # nothing that says how training went was read, and nothing was found: unknown
    everything = engine.alerts()
    echoes = [a for a in everything if not a.told and not a.retracted]
    withdrawn = [a for a in everything if a.retracted]
    counts = {"critical": 0, "warning": 0, "info": 0}
    for a in alerts:
        counts[a.severity.label] += 1
    srcs = []
    for info in sources:
        state = engine.sources.get(info.name)
        metrics = metrics_of(engine, info.name)
        steps = [m["last_step"] for m in metrics.values() if m["last_step"] is not None]
        plan = latest(state) if state else None
        srcs.append({
            "path": info.name, "format": info.format, "preset": preset, "lines": info.lines, "records": info.records,
            "last_step": state.step if state else None, "total_steps": state.total_steps if state else None,
            "planned_total": plan.to_dict() if plan else None,
            "max_step": max(steps) if steps else None,
            "ended": bool(state and state.ended), "metrics": metrics, "skipped": info.skipped,
            "config": _config_of(state),
        })
    return _jsonable({
        "schema": SCHEMA_VERSION, "status": STATUS[code], "exit_code": code, "preset": preset,
        "preset_auto": preset_auto, "task": task_of(engine), "sources": srcs, "counts": counts,
        "findings": fixes_once([a.to_dict() for a in alerts]),
        "inhibited": [{"id": a.rule, "severity": a.severity.label, "subject": a.finding.subject,
                       "step": a.first_step, "line": a.first_line, "source": a.finding.source} for a in echoes],
        "withdrawn": [{"id": a.rule, "severity": a.severity.label, "subject": a.finding.subject,
                       "step": a.first_step, "line": a.first_line, "source": a.finding.source,
                       "why": a.retracted} for a in withdrawn],
    })


def fixes_once(findings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each fix told once per run, and no two that contradict: in report order (root causes first), a
    finding drops a fix an earlier finding of its run already gave (the same words or topic: a warmup fix
    under the divergence is not told again under lr.no_warmup), naming those findings in
    `fixes_given_by`; and a fix that says the opposite of one told before (raise the LR after the root's
    lower the LR), unless it is said as a condition, naming what it contradicted in `fixes_left_out`."""
    told: dict[str, tuple[Given, dict[str, str]]] = {}
    for f in findings:
        given, by_topic = told.setdefault(str(f.get("source")), (Given(), {}))
        kept: list[str] = []
        by: list[str] = []
        left: list[dict[str, str]] = []
        for fix in f.get("fixes") or []:
            against = given.against(fix)
            if against is not None and by_topic.get(against, f["id"]) != f["id"]:
                left.append({"fix": fix, "contradicts": by_topic[against]})
                continue
            if given.new(fix):
                kept.append(fix)
                for topic in topics(fix):
                    by_topic.setdefault(topic, f["id"])
                by_topic.setdefault(_norm(fix), f["id"])
                continue
            said = topics(fix)
            earlier = by_topic.get(said[0] if said else _norm(fix)) or by_topic.get(_norm(fix))
            if earlier and earlier != f["id"] and earlier not in by:
                by.append(earlier)
        if len(kept) != len(f.get("fixes") or []):
            f["fixes"] = kept
            if by:
                f["fixes_given_by"] = by
            if left:
                f["fixes_left_out"] = left
    return findings


def _norm(fix: str) -> str:
    return re.sub(r"\W+", " ", fix).strip().lower()


def _config_of(state: SourceState | None) -> dict[str, Any]:
    """The run's configuration as its log printed it: each fact with the key and the place it was read
    from, and the framework's own advice (trainwatch.runconfig)."""
    cfg = state.facts.get("run_config") if state is not None else None
    return cfg.to_dict() if isinstance(cfg, RunConfig) else {}


def _plan_text(plan: dict[str, Any], step: int | None = None) -> str:
    """The planned total beside the step in a source's header, when no step total was read. A step plan
    below the step shown was set by a later launch that counted nothing yet: never "step 219 of 18"."""
    if plan["reached"] is not None:
        return f", {plan['unit']} {plan['reached']} of {plan['value']}"
    if plan["unit"] == "step" and (step is None or step <= plan["value"]):
        return f" of {plan['value']} (planned)"
    if plan["unit"] == "step":
        return f", a later launch planned {plan['value']} steps (line {plan['line']})"
    return f", {plan['value']} {plan['unit']} planned"


def combine(docs: list[dict[str, Any]]) -> dict[str, Any]:
    """One report of several runs, each judged on its own (its own task, preset and engine): sources and
    findings of each run, the runs with the worst findings first; the status is the worst, and unknown
    only when no run said anything about how training went. `runs` counts them; `preset` and `task` are
    the runs' own when they share them, else `per run` and null (each source names its preset)."""
    if len(docs) == 1:
        return {**docs[0], "runs": 1}
    order = sorted(range(len(docs)), key=lambda i: -_worst_rank(docs[i]))
    known = [d["exit_code"] for d in docs if d["exit_code"] != 3]
    code = max(known) if known else 3
    presets = {d["preset"] for d in docs}
    tasks = {json.dumps(d["task"], sort_keys=True) for d in docs}
    counts = {k: sum(d["counts"][k] for d in docs) for k in ("critical", "warning", "info")}
    return {
        "schema": SCHEMA_VERSION, "status": STATUS[code], "exit_code": code,
        "preset": presets.pop() if len(presets) == 1 else "per run",
        "preset_auto": all(d["preset_auto"] for d in docs),
        "task": docs[0]["task"] if len(tasks) == 1 else None, "runs": len(docs),
        "sources": [s for d in docs for s in d["sources"]], "counts": counts,
        "findings": [f for i in order for f in docs[i]["findings"]],
        "inhibited": [e for i in order for e in docs[i]["inhibited"]],
        "withdrawn": [e for i in order for e in docs[i]["withdrawn"]],
    }


_SEVERITY_RANK = {"critical": 3, "warning": 2, "info": 1}


def _worst_rank(doc: dict[str, Any]) -> int:
    return max((_SEVERITY_RANK.get(f["severity"], 0) for f in doc["findings"]), default=0)


def task_of(engine: Engine) -> dict[str, Any] | None:
    """The task the preset was chosen for and the clues behind it, as the sources' facts hold them."""
    for state in engine.sources.values():
        t = state.facts.get("task")
        if isinstance(t, str) and t in TASK_NAMES:
            return {"id": t, "name": TASK_NAMES[t], "preset": TASK_PRESET[t], "why": state.facts.get("task_why", "")}
    return None


def write_json(doc: dict[str, Any], out: TextIO) -> None:
    json.dump(doc, out, indent=2, allow_nan=False)
    out.write("\n")


def write_text(doc: dict[str, Any], out: TextIO) -> None:
    def w(text: str) -> None:
        out.write(plain(text, keep_newlines=True))

    runs = doc.get("runs", 1)
    if runs > 1 and doc["preset"] == "per run":
        w(f"trainwatch check: {len(doc['sources'])} source(s) in {runs} runs, each judged on its own with its "
          "own preset\n")
    elif runs > 1:
        w(f"trainwatch check: {len(doc['sources'])} source(s) in {runs} runs, each judged on its own, preset "
          f"{doc['preset']}{_preset_why(doc)}\n")
    else:
        w(f"trainwatch check: {len(doc['sources'])} source(s), preset {doc['preset']}{_preset_why(doc)}\n")
    for s in doc["sources"]:
        step = s["last_step"]
        total = f" of {s['total_steps']}" if s["total_steps"] else ""
        ended = ", training ended" if s["ended"] else ""
        steps = f"step {step}{total}" if step is not None else "no steps"
        plan = s.get("planned_total")
        if plan and not s["total_steps"]:
            steps += _plan_text(plan, step)
        preset = f", preset {s['preset']}" if doc["preset"] == "per run" and s.get("preset") else ""
        w(f"  {s['path']}  [{s['format']}{preset}]  {s['lines']} lines, {steps}{ended}\n")
        shown = [(k, s["metrics"][k]) for k in KEY_METRICS if k in s["metrics"]]
        if shown:
            parts = []
            for k, m in shown:
                bad = m["nan"] + m["inf"]
                notes = [f"{bad} non-finite"] if bad else []
                if m.get("last_finite_step") is not None:
                    notes.append(f"the last finite {_fmt_json(m['last_finite'])} at step {m['last_finite_step']}")
                if step is not None and m.get("last_step") is not None and m["last_step"] != step:
                    notes.insert(0, f"step {m['last_step']}")  # logged before the source's last step: say when
                parts.append(f"{k} {_fmt_json(m['last'])}" + (f" ({'; '.join(notes)})" if notes else ""))
            w("    last: " + ", ".join(parts) + "\n")
        cfg = _config_line(s.get("config") or {})
        if cfg:
            w(f"    config: {cfg}\n")
        for why in s["skipped"]:
            w(f"    note: {why}\n")
    findings = doc["findings"]
    w("\n")
    if not findings:
        read = {k for src in doc["sources"] for k in src["metrics"]}
        if doc["exit_code"] != 3:
            w("No findings: the run looks healthy.\n")
        else:
            what = ", ".join(sorted(read)[:6]) if read else "no metric at all"
            w(f"No findings, but no loss was read ({what}): nothing here tells how the training went.\n")
    for f in findings:
        w(f"{f['severity'].upper():8} {f['id']}  [{f['family']}]  {_where(f)}  {f['source']}\n")
        w(f"  {f['title']}: {f['message']}\n")
        if f.get("echo_of"):
            w(f"  part of the incident above ({f['echo_of']}); its evidence and fixes are there\n\n")
            continue
        ev = _evidence_line(f["evidence"])
        if ev:
            w(f"  evidence: {ev}\n")
        episodes = f.get("episodes") or []
        fired = max(f.get("episode_count") or 0, len(episodes))
        if fired > 1:
            w(f"  fired {fired} times: steps {_spans(episodes, fired)}\n")
        latest = _latest(f)
        if latest:
            w(f"  {latest}\n")
        for i, fix in enumerate(f["fixes"], 1):
            w(f"  {i}. {fix}\n")
        by = f.get("fixes_given_by")
        if by:
            more = "other fixes are" if f["fixes"] else "its fixes are"
            w(f"  {more} given above, under {', '.join(by)}\n")
        for gone in f.get("fixes_left_out") or []:
            w(f"  left out, as it says the opposite of {gone['contradicts']}'s fixes above: {gone['fix']}\n")
        w("\n")
    for e in doc.get("withdrawn") or []:
        w(f"Withdrawn: {e['id']} ({_where_short(e)}) was disproved later: {e['why']}\n")
    echoes = doc.get("inhibited") or []
    if echoes:
        w("Also seen, held back as echoes of the findings above (inhibited): "
          + ", ".join(f"{e['id']} ({_where_short(e)})" for e in echoes) + "\n")
    c = doc["counts"]
    w(f"Status: {doc['status'].upper()} ({c['critical']} critical, {c['warning']} warning, {c['info']} info)\n")


_CONFIG_SHOWN = ("micro_batch", "grad_accum", "seq_len", "attention", "precision", "grad_checkpointing", "fsdp",
                 "fsdp_version", "reshard", "activation_checkpointing", "zero_stage", "max_grad_norm", "lr", "warmup",
                 "optimizer", "tuner")


def _config_line(cfg: dict[str, Any]) -> str:
    """The facts the fixes were fitted to, each under the run's own name for it and with the value as the
    log printed it (`recompute_granularity full`, `params_dtype torch.bfloat16`, `clip_grad 1.0`): the
    reading the advice uses (on, bf16, 1) is not what the log says, and a reader greps for the log's."""
    parts = []
    for name in _CONFIG_SHOWN:
        f = cfg.get(name)
        if not isinstance(f, dict):
            continue
        v = f.get("value")
        logged = f.get("logged")
        if isinstance(logged, str) and logged:
            shown = logged
        else:
            shown = ("true" if v else "false") if isinstance(v, bool) else _fmt_json(v)
        parts.append(f"{f.get('key', name)} {shown}")
    return ", ".join(parts)


def _where_short(e: dict[str, Any]) -> str:
    return f"step {e['step']}" if e["step"] is not None else f"line {e['line']}"


def _where(f: dict[str, Any]) -> str:
    """The step the finding is about, the step where the evidence became enough when that differs, and
    the log line beside the step it holds: a reader who opens that line finds that step there."""
    line = f", line {f['line']}" if f.get("line") else ""
    if f["step"] is None:
        return "no step" + line
    notes = ["inferred"] if f["step_inferred"] else []
    found = f.get("found_step")
    if found is not None and found != f["step"]:
        at_found = bool(line) and f.get("line_step") == found
        notes.append(f"evidence enough at {found}" + (line if at_found else ""))
        line = "" if at_found else line
    return f"step {f['step']}" + (f" ({'; '.join(notes)})" if notes else "") + line


def _spans(episodes: list[dict[str, Any]], total: int, head: int = 8) -> str:
    """The first episodes and the latest; the ones between are counted, not listed."""
    if len(episodes) <= head + 1 and total == len(episodes):
        return ", ".join(_span(e) for e in episodes)
    hidden = total - head - 1
    return ", ".join(_span(e) for e in episodes[:head]) + f", ... ({hidden} more), " + _span(episodes[-1])


def _span(e: dict[str, Any]) -> str:
    start, end = e.get("start"), e.get("end")
    if start is None:
        return "?"
    if not e.get("resolved"):
        return f"{start} on"
    return str(start) if end is None or end == start else f"{start}-{end}"


def _latest(f: dict[str, Any]) -> str:
    """'last seen at step N, value V' when the condition held past the moment the finding describes."""
    step, value = f.get("last_step"), f.get("last_value")
    if step is None or step == f.get("found_step", f["step"]):
        return ""
    text = f"last seen at step {step}"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        stat = (f.get("evidence") or {}).get("last_stat")  # a level, not the value logged there
        text += f", {stat} {_fmt(float(value))}" if isinstance(stat, str) and stat else f", value {_fmt(float(value))}"
    again = f.get("held_again") or 0
    if again and f.get("stopped"):
        return text + f" ({f['count']} times; {f['stopped']})"
    return text + (f" ({f['count']} times)" if f["count"] > 1 else "")


def _preset_why(doc: dict[str, Any]) -> str:
    t = doc.get("task")
    if not t:
        return " (chosen from the metric names)" if doc["preset_auto"] else ""
    if doc["preset_auto"]:
        return f" for {t['name']} ({t['why']})"
    if t["preset"] == doc["preset"]:
        return " (as asked)"
    return f" (as asked; the log looks like {t['name']}: {t['why']})"


def _fmt_json(v: Any) -> str:
    if isinstance(v, int) and not isinstance(v, bool) and abs(v) < 10**12:
        return str(v)  # steps and counts read as written
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return _fmt(float(v))
    return str(v)


_SHOWN_APART = ("last_step", "last_value", "last_stat")  # printed on the "last seen" line, not as the start's evidence


def _evidence_line(ev: dict[str, Any]) -> str:
    parts = []
    for k, v in ev.items():
        if k in _SHOWN_APART:
            continue
        if isinstance(v, (list, tuple)):
            v = "[" + ", ".join(_fmt_json(x) for x in list(v)[-8:]) + "]"
        elif isinstance(v, str) and "\n" in v:
            continue  # whole tracebacks go in the JSON, not the one-line summary
        else:
            v = _fmt_json(v)
        parts.append(f"{k}={v}")
    return ", ".join(parts)
