"""POT's exact solver loaded without POT's package initialisation (wmd/pot_simplex.py)."""

from __future__ import annotations

import numpy as np
import ot
from workflow_helpers import python_output

from wmdeval.distances.wmd import pot_simplex


def test_a_later_import_of_pot_works_and_shares_the_compiled_module():
    out = python_output(
        """
        import numpy as np
        from wmdeval.distances.wmd.pot_simplex import emd_c
        rng = np.random.default_rng(3)
        a, b = rng.random(7), rng.random(5)
        a, b = a / a.sum(), b / b.sum()
        cost = rng.random((7, 5))
        mine = emd_c(a, b, cost, 100000, 1)[1]
        import ot
        print(ot.lp.emd_wrap.emd_c is emd_c, abs(ot.emd2(a, b, cost) - mine) < 1e-12)
        """
    )
    assert out == "True True"


def test_the_directly_loaded_solver_gives_pots_values_to_the_bit():
    rng = np.random.default_rng(11)
    direct = pot_simplex._load_directly().emd_c
    for n1, n2 in [(2, 3), (10, 10), (40, 25)]:
        a, b = rng.random(n1), rng.random(n2)
        a, b = a / a.sum(), b / b.sum()
        cost = np.ascontiguousarray(rng.random((n1, n2)))
        plan, value, u, v, code = direct(a, b, cost, 100000, 1)
        assert code == 1
        assert abs(value - ot.emd2(a, b, cost)) < 1e-12  # emd2 sums the plan its own way
        # (ot.emd rescales b to a's mass first, which may move its bits)
        np.testing.assert_allclose(plan, ot.emd(a, b, cost), rtol=0, atol=1e-12)
        # the duals are optimal: feasible and complementary to the plan
        assert np.all(u[:, None] + v[None, :] <= cost + 1e-12)
        assert abs(float(u @ a + v @ b) - value) < 1e-12


def test_with_pot_imported_already_it_is_pots_own_function():
    assert pot_simplex.load_emd_wrap() is ot.lp.emd_wrap
