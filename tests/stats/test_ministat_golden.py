"""Golden outputs for the verdict wording, written out by hand (numbers checked by hand:
e.g. pooled s = sqrt((2*1 + 2*7/3) / 4) = 1.29099, e = t(4 df) * s * sqrt(2/3)).

These need no ministat binary: they pin netrig's own output.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from netrig.cli.cmd_stat import run

X1 = "1\n2\n3\n"
X2 = "10\n11\n13\n"


def stat(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *argv: str, **files: str):
    monkeypatch.chdir(tmp_path)
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    out, err = io.BytesIO(), io.BytesIO()
    rc = run([a.encode() for a in argv], stdin=io.BytesIO(), stdout=out, stderr=err)
    return rc, out.getvalue().decode(), err.getvalue().decode()


def test_difference_at_95(tmp_path, monkeypatch):
    rc, out, err = stat(tmp_path, monkeypatch, "-A", "before", "after", before=X1, after=X2)
    assert (rc, err) == (0, "")
    assert out == (
        "x before\n"
        "+ after\n"
        "    N           Min           Max        Median           Avg        Stddev\n"
        "x   3             1             3             2             2             1\n"
        "+   3            10            13            11     11.333333     1.5275252\n"
        "Difference at 95.0% confidence\n"
        "\t9.33333 +/- 2.92616\n"
        "\t466.667% +/- 146.308%\n"
        "\t(Student's t, pooled s = 1.29099)\n"
    )


def test_difference_at_99_5_uses_its_t(tmp_path, monkeypatch):
    rc, out, _ = stat(tmp_path, monkeypatch, "-A", "-c", "99.5", "a", "b", a=X1, b=X2)
    assert rc == 0
    assert out.endswith(
        "Difference at 99.5% confidence\n"
        "\t9.33333 +/- 7.56101\n"
        "\t466.667% +/- 378.05%\n"
        "\t(Student's t, pooled s = 1.29099)\n"
    )


def test_negative_difference(tmp_path, monkeypatch):
    rc, out, _ = stat(
        tmp_path, monkeypatch, "-A", "-c", "99", "a", "b", a="100\n101\n102\n", b="95\n96\n97\n"
    )
    assert rc == 0
    assert out.endswith(
        "Difference at 99.0% confidence\n"
        "\t-5 +/- 3.75915\n"
        "\t-4.9505% +/- 3.72193%\n"
        "\t(Student's t, pooled s = 1)\n"
    )


R1 = "36060\n36138\n36107\n36100\n36123\n"
R2 = "36084\n36187\n36163\n36190\n36089\n"


def test_no_difference_with_plot(tmp_path, monkeypatch):
    rc, out, _ = stat(tmp_path, monkeypatch, "r1", "r2", r1=R1, r2=R2)
    assert rc == 0
    assert out == (
        "x r1\n"
        "+ r2\n"
        "+--------------------------------------------------------------------------+\n"
        "|x            +  +     x  x        x       x             +            ++   |\n"
        "|         |______|________A_______________|___A__________M________________||\n"
        "+--------------------------------------------------------------------------+\n"
        "    N           Min           Max        Median           Avg        Stddev\n"
        "x   5         36060         36138         36107       36105.6     29.432975\n"
        "+   5         36084         36190         36163       36142.6     52.300096\n"
        "No difference proven at 95.0% confidence\n"
    )


def test_separate_bars_and_80_percent(tmp_path, monkeypatch):
    rc, out, _ = stat(tmp_path, monkeypatch, "-s", "-c", "80", "r1", "r2", r1=R1, r2=R2)
    assert rc == 0
    assert (
        "|         |_______________A_______________|                                |\n"
        "|                |____________________________A__________M________________||\n"
    ) in out
    assert out.endswith("No difference proven at 80.0% confidence\n")


def test_summary_only_has_no_verdict(tmp_path, monkeypatch):
    rc, out, _ = stat(tmp_path, monkeypatch, "-n", "a", "b", a=X1, b=X2)
    assert rc == 0
    assert "confidence" not in out and "+----" not in out


def test_overlap_symbol_and_zero_span(tmp_path, monkeypatch):
    rc, out, _ = stat(tmp_path, monkeypatch, "-w", "10", "a", "b", a=X1, b=X1)
    assert rc == 0
    # columns (v - x0) / dx with dx = 2/9: 0.5, 5.0, 9.5 -> 0, 5, 9; x|+ = 1|2 = 3 = '*'
    assert "|*    *   *|\n" in out
    rc, out, _ = stat(tmp_path, monkeypatch, "c", c="5\n5\n5\n")
    assert "[no plot, span is zero width]\n" in out


def test_errors_and_exit_codes(tmp_path, monkeypatch):
    assert stat(tmp_path, monkeypatch, "a", a="1\n2\n")[::2] == (
        2,
        "Dataset a must contain at least 3 data points\n",
    )
    assert stat(tmp_path, monkeypatch, "a", a="1\n2\nthree\n")[::2] == (
        2,
        "ministat: Invalid data on line 3 in a\n",
    )
    assert stat(tmp_path, monkeypatch, "missing")[::2] == (
        1,
        "ministat: Cannot open missing: No such file or directory\n",
    )
    rc, _, err = stat(tmp_path, monkeypatch, "-c", "97", "a", a=X1)
    assert rc == 2
    assert err.startswith("No support for confidence level\nUsage: ministat [-C column]")
    assert "\tconfidence = {80%, 90%, 95%, 98%, 99%, 99.5%}\n" in err
