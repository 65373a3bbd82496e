"""loss.kl_collapse: a KL term beside a reconstruction term that fell to about 0 is a VAE's posterior
collapse; a KL with no reconstruction beside it (a policy's, a distillation's) is no VAE's and is left alone."""

from __future__ import annotations

from rulekit import Run

from trainwatch.model import Severity


def _vae(r: Run, kl_end: float, epochs: int = 60, kl: str = "train_kl", recon: str | None = "train_recon") -> None:
    for e in range(1, epochs + 1):
        rec = 0.02 + 0.05 / e
        k = max(kl_end, 0.004 / e ** 2)  # from 4e-3 down to its floor
        r.step(e, loss=rec + k, **{kl: k}, **({recon: rec} if recon else {}))
    r.finish()


def test_a_kl_that_fell_to_a_hair_of_the_reconstruction_is_a_posterior_collapse() -> None:
    r = Run()
    _vae(r, kl_end=1e-5)
    a = r.alert("loss.kl_collapse")
    assert a is not None and a.severity == Severity.WARNING
    assert a.finding.subject == "train_kl" and a.finding.evidence["value"] == 0.004  # the logged first value


def test_a_kl_that_stays_a_real_part_of_the_loss_is_left_alone() -> None:
    for end in (0.004, 1e-3):  # flat at its start, or fell 4x to 5% of the reconstruction: a working latent code
        r = Run()
        _vae(r, kl_end=end)
        assert "loss.kl_collapse" not in r.fired()


def test_a_kl_with_no_reconstruction_beside_it_is_no_vaes() -> None:
    """A distillation's KL to its teacher falling to 0 is the student learning."""
    r = Run()
    _vae(r, kl_end=1e-6, kl="kl_loss", recon=None)
    assert "loss.kl_collapse" not in r.fired()
