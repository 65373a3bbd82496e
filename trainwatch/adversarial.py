"""A GAN's two losses, told apart by name, so that readers give the generator's objective as the run's loss
and rules know a rising generator loss may be the discriminator winning rather than a numeric divergence.

Names: `loss G`, `Gen Loss`, `Loss_D`, `errG`, `d_loss`, `generator_loss`, and pix2pix's capitalised terms
(`G_GAN`, `G_L1`, `D_real`, `D_fake`). A record is adversarial only when it holds both sides.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

_SIDE_LOSS = r"^(?:(?:loss|err)[ _]?{s}|{s}[ _]?(?:loss|err))$"
GENERATOR = (re.compile(_SIDE_LOSS.format(s="(?:g|gen|generator)"), re.I), re.compile(r"^G_[A-Za-z0-9]+$"))
DISCRIMINATOR = (re.compile(_SIDE_LOSS.format(s="(?:d|disc|discriminator)"), re.I),
                 re.compile(r"^D_[A-Za-z0-9]+$"))
PLAIN_LOSS = frozenset({"loss", "total_loss"})


def _side(name: str, side: tuple[re.Pattern[str], re.Pattern[str]]) -> bool:
    key = name.strip()
    return side[0].match(key) is not None or side[1].match(key) is not None


def is_discriminator(name: str) -> bool:
    return _side(name, DISCRIMINATOR)


def generator_as_loss(pairs: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """A record that holds both sides of a GAN and no plain loss: the generator's objective (its one term, or
    the sum of its terms as printed: pix2pix's loss_G is G_GAN + G_L1) is also given as `loss`. The generator
    is the model trained for its output, so its loss is the run's; the discriminator's stays its own series."""
    if len(pairs) < 2 or any(k.strip().lower() in PLAIN_LOSS for k, _ in pairs):
        return pairs
    gen = [v for k, v in pairs if _side(k, GENERATOR)]
    if not gen or not any(_side(k, DISCRIMINATOR) for k, _ in pairs):
        return pairs
    return [*pairs, ("loss", math.fsum(gen))]


def adversarial(names: Iterable[str]) -> bool:
    """Whether a source's series include a discriminator's loss: its `loss` is then a generator's."""
    return any(is_discriminator(n) for n in names)
