"""Regenerate the figures of the docs from the real codecs.

    pip install ".[plot]"
    python docs/make_figures.py            # writes docs/figures/*.png
    python docs/make_figures.py --table    # also prints the tables the figure is drawn from

Every number drawn here is read off a codec object (``Bounded(...).max_error``,
``Quat(b).max_error``, ``UnitVector(b).max_error``), never retyped, so the figure cannot drift
from the library.
"""

import argparse
import math
import pathlib
import sys

import quantcodec as qc

HERE = pathlib.Path(__file__).resolve().parent
FIGURES = HERE / "figures"

BOUNDED_BITS = range(1, 33)
ROTATION_BITS = range(2, 21)   # Quat allows 2..20 bits a component; UnitVector is drawn over the same span


def error_tables():
    """The tables behind the figure: {name: [(bits_per_component, total_bits, worst_error), ...]}."""
    return {
        # worst error of a Bounded field as a share of its range, in both modes
        "Bounded endpoints": [(b, b, qc.Bounded(0.0, 1.0, b).max_error) for b in BOUNDED_BITS],
        "Bounded bins": [(b, b, qc.Bounded(0.0, 1.0, b, mode="bins").max_error) for b in BOUNDED_BITS],
        # worst rotation / direction error in degrees
        "Quat": [(b, qc.Quat(b).bits, qc.Quat(b).max_error) for b in ROTATION_BITS],
        "UnitVector": [(b, qc.UnitVector(b).bits, qc.UnitVector(b).max_error) for b in ROTATION_BITS],
    }


def draw(path):
    try:
        import matplotlib
    except ImportError:
        sys.exit("make_figures.py needs matplotlib: pip install 'quantcodec[plot]'")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    t = error_tables()
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.4), constrained_layout=True)

    for name, style in (("Bounded endpoints", "o-"), ("Bounded bins", "x--")):
        bits = [row[0] for row in t[name]]
        err = [row[2] for row in t[name]]
        left.semilogy(bits, err, style, markersize=3.5, label=name)
    left.xaxis.set_major_locator(MaxNLocator(integer=True))
    left.text(0.97, 0.6, "endpoints: (R / (2**bits - 1)) / 2\nbins: (R / 2**bits) / 2", transform=left.transAxes,
              ha="right", fontsize=8, family="monospace")
    left.set_xlabel("bits")
    left.set_ylabel("worst error / (max - min)")
    left.set_title("Bounded: half a step, halved by each bit")
    for share, text in ((1 / 256 / 2 / 4096, "4 km at 1/256 m"), (0.001 / 64, "64 m at 1 mm")):
        left.axhline(share, color="grey", linewidth=0.6)
        left.annotate(text, (1.5, share), textcoords="offset points", xytext=(0, 3), fontsize=8, color="grey")
    left.grid(True, which="major", alpha=0.3)
    left.legend()

    for name, style in (("Quat", "o-"), ("UnitVector", "s-")):
        bits = [row[0] for row in t[name]]
        err = [row[2] for row in t[name]]
        right.semilogy(bits, err, style, markersize=3.5, label=f"{name}(bits).max_error")
    bits = list(ROTATION_BITS)
    right.semilogy(bits, [math.degrees(2 * math.sqrt(6)) / 2 ** b for b in bits], ":", color="black",
                   label="281° / 2**bits (first-order estimate)")
    q9 = qc.Quat(9)
    right.annotate(f"Quat(9): {q9.bits} bits, {q9.max_error:.2f}°", (9, q9.max_error),
                   textcoords="offset points", xytext=(8, 8), fontsize=8)
    right.xaxis.set_major_locator(MaxNLocator(integer=True))
    right.set_xlabel("bits per component")
    right.set_ylabel("worst angle (degrees)")
    right.set_title("Quat (2 + 3 x bits) and UnitVector (2 x bits)")
    right.grid(True, which="major", alpha=0.3)
    right.legend()

    fig.suptitle("quantcodec: worst decoded error against bits")
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", action="store_true", help="print the tables the figures are drawn from")
    args = parser.parse_args(argv)
    if args.table:
        for name, rows in error_tables().items():
            print(name)
            for b, total, err in rows:
                print(f"  {b:3d} bits ({total:3d} in all): {err:.6g}")
    FIGURES.mkdir(exist_ok=True)
    out = FIGURES / "error-vs-bits.png"
    draw(out)
    print(f"wrote {out.relative_to(HERE.parent)}")


if __name__ == "__main__":
    main()
