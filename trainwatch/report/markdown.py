"""The report as Markdown for a PR comment or an issue: the runs, their incidents root first, fixes.

Markdown hosts render inline HTML and links, and log text is untrusted: every piece of it is made
printable and has HTML and Markdown's active characters escaped, so it shows as the text it was."""

from __future__ import annotations

import re
from typing import Any

from trainwatch.textsafe import plain

_ACTIVE = re.compile(r"([\\`*_\[\]|~])")
SEVERITY_MARK = {"critical": "🔴", "warning": "🟠", "info": "🔵"}


def text(value: Any) -> str:
    """Untrusted text as literal Markdown: one line, HTML characters as entities, Markdown ones escaped."""
    s = plain(str(value)).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _ACTIVE.sub(r"\\\1", s)


def summary(labels: list[str], docs: list[dict[str, Any]], diff: list[str]) -> str:
    out: list[str] = []
    title = "trainwatch comparison" if len(docs) > 1 else "trainwatch report"
    out.append(f"## {title}\n")
    if diff:
        out.append("### Differences\n")
        out.extend(f"- {text(line)}" for line in diff)
        out.append("")
    for label, doc in zip(labels, docs):
        out.extend(_run(label, doc, heading=len(docs) > 1))
    return "\n".join(out).rstrip() + "\n"


def _run(label: str, doc: dict[str, Any], heading: bool) -> list[str]:
    out = []
    if heading:
        out.append(f"### {text(label)}\n")
    c = doc["counts"]
    task = f", task {text(doc['task']['name'])}" if doc.get("task") else ""
    out.append(f"**Status: {doc['status'].upper()}** (preset {text(doc['preset'])}{task}; "
               f"{c['critical']} critical, {c['warning']} warning, {c['info']} info)\n")
    out.append("| source | format | lines | last step |")
    out.append("|---|---|---|---|")
    for s in doc["sources"]:
        out.append(f"| {text(s['path'])} | {text(s['format'])} | {s['lines']} | {s.get('max_step')} |")
    out.append("")
    if not doc["findings"]:
        out.append("No findings.\n")
        return out
    for f in doc["findings"]:
        mark = SEVERITY_MARK.get(f["severity"], "")
        step = f"step {f['step']}" if f.get("step") is not None else "no step"
        where = f", line {f['line']}" if f.get("line") else ""
        indent = "  " if f.get("echo_of") else ""
        out.append(f"{indent}- {mark} **{text(f['severity'].upper())} {text(f['id'])}** ({step}{where}): "
                   f"{text(f['title'])}")
        out.append(f"{indent}  {text(f['message'])}")
        if f.get("echo_of"):  # its evidence and fixes are the incident's, listed with the root
            out.append(f"{indent}  part of the incident {text(f['echo_of'])}")
            continue
        for i, fix in enumerate(f.get("fixes") or [], 1):
            out.append(f"{indent}  {i}. {text(fix)}")
        if f.get("fixes_given_by"):  # told once: the fixes it shares are under the finding that gave them
            out.append(f"{indent}  {'other fixes are' if f.get('fixes') else 'its fixes are'} given above, under "
                       f"{text(', '.join(f['fixes_given_by']))}")
        for gone in f.get("fixes_left_out") or []:
            out.append(f"{indent}  left out, as it says the opposite of {text(gone['contradicts'])}'s fixes above: "
                       f"{text(gone['fix'])}")
    out.append("")
    return out
