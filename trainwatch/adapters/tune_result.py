"""Ray Tune's `Result for TRIAL:` blocks: an RLlib (or any Tune) trial's result dict, printed as indented YAML.

    Result for DQN_env_00000:
      episode_reward_mean: 0.0
      info:
        learner:
          default_policy:
            learner_stats:
              grad_gnorm: 0.18
              mean_q: -0.015
      training_iteration: 1

One record per block, at its `training_iteration`. A leaf is named by its own key (`grad_gnorm`, `mean_q`:
the names the alias table and the rules know) unless the block holds that key more than once (one set of
learner stats per policy, `policy_reward_mean: {player_0: .., player_1: ..}`): then by the keys that tell
the copies apart (`player_0/mean_q`); a value per policy (`policy_reward_mean: {player_0: ..}`) is named
with its mapping (`policy_reward_mean/player_0`), the policy's name alone being no metric. Lists
(`td_error: - ..`), strings and the trial's bookkeeping (its pid, clock and counters of restarts) are no
metrics. A second trial in the same log has its metrics named under the trial (`TRIAL/mean_q`): one series
is one trial's curve.
"""

from __future__ import annotations

import re
from collections import Counter

HEAD = re.compile(r"^Result for (?P<trial>\S+?):\s*$")
ENTRY = re.compile(r"^(?P<indent> +)(?P<k>[A-Za-z_][\w./\-]*):(?:\s+(?P<v>\S.*?))?\s*$")
NUMBER = re.compile(r"^[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|nan|inf|-inf)$")
STEP_KEY = "training_iteration"
# the trial's bookkeeping: numbers that are no measure of the training
NOT_METRICS = frozenset({"pid", "timestamp", "iterations_since_restore", "time_since_restore",
                         "timesteps_since_restore", "warmup_time", "num_healthy_workers", "done"})
# path keys that only group, and never tell copies apart
GROUPS = frozenset({"info", "learner", "learner_stats"})
MAX_LINES = 4000  # a block is a few hundred lines; past this it is not a result block


class TuneResult:
    """One `Result for` block being read: its numeric leaves by their key paths."""

    def __init__(self, trial: str, line: int) -> None:
        self.trial = trial
        self.line = line
        self.lines = 0
        self.stack: list[tuple[int, str]] = []  # (indent, key) of the open mappings
        self.leaves: list[tuple[tuple[str, ...], float]] = []

    def feed(self, line: str) -> bool:
        """Take one line of the block; False when the line is not the block's (the block has ended)."""
        if not line.strip():
            return True  # (Tune ends a block with a blank, indented line)
        if line[:1] != " " or self.lines >= MAX_LINES:
            return False
        self.lines += 1
        m = ENTRY.match(line)
        if m is None:
            return True  # a list item (`- 0.72`) or a wrapped value
        indent = len(m.group("indent"))
        while self.stack and self.stack[-1][0] >= indent:
            self.stack.pop()
        key, raw = m.group("k"), m.group("v")
        if raw is None:
            self.stack.append((indent, key))
        elif NUMBER.match(raw) is not None:
            self.leaves.append((tuple(k for _, k in self.stack) + (key,), float(raw)))
        return True

    def pairs(self) -> tuple[int | None, list[tuple[str, float]]]:
        """The block's step (its training_iteration) and its metrics."""
        step = next((int(v) for path, v in self.leaves if path == (STEP_KEY,) and v == v), None)
        counts = Counter(path[-1] for path, _ in self.leaves)
        out: list[tuple[str, float]] = []
        for path, v in self.leaves:
            key = path[-1]
            if path == (STEP_KEY,) or key in NOT_METRICS:
                continue
            if counts[key] > 1 or (len(path) > 1 and path[-2].startswith("policy_")):
                key = "/".join([k for k in path[:-1] if k not in GROUPS] + [key])
            out.append((key, v))
        return step, out
