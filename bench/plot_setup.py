"""The command line and the matplotlib set-up that the plot scripts over docs/data share."""
import argparse
import pathlib


def plot_args(doc):
    """Parses --data (default docs/data) and --out for a script whose help is `doc`; returns the
    arguments and pyplot with the file-only Agg backend (no display on the machines we plot on)."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(pathlib.Path(__file__).resolve().parent.parent / "docs" / "data"))
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return args, plt
