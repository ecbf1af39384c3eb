"""γ of Theorem 1 against the figures the paper quotes (Acs et al. Sec. VI-B, VI-E)."""

from __future__ import annotations

import pytest

from setanon_sql.models.km.samplesize import gamma, hoeffding_samples


def test_unicity_sample_size_of_section_vi_b() -> None:
    assert hoeffding_samples(0.01, 0.01) == 26492


@pytest.mark.parametrize(("sigma", "quoted"), [(0.99, 45845), (0.999, 5866617)])
def test_gamma_of_section_vi_e(sigma: float, quoted: int) -> None:
    assert gamma(sigma) == quoted


def test_gamma_grows_with_sigma() -> None:
    values = [gamma(s) for s in (0.6, 0.9, 0.95, 0.99)]
    assert values == sorted(values) and values[0] > 0


def test_gamma_refuses_exact_sigma() -> None:
    with pytest.raises(ValueError, match="sampled guarantee"):
        gamma(1.0)
