"""The notebooks' own kernel (`Python (dflash-postmortem)`): IPython's, which tells the notebook
its language without the interpreter's version.

JupyterLab writes what a kernel says of its language into the notebook's metadata as soon as the
kernel starts, and marks the notebook modified when that differs from what the file holds. A
notebook that says nothing of the interpreter's version reads the same on every machine, so
opening one changes nothing; the version stays in what a run of the notebook records (papermill's
own metadata) and in `sys.version`.

    python -m dflash_postmortem.report.lab_kernel -f CONNECTION_FILE   (the kernelspec's argv)
"""

from __future__ import annotations

from ipykernel.ipkernel import IPythonKernel
from ipykernel.kernelapp import IPKernelApp

# What the notebooks' metadata holds, and the kernel says: IPython's language_info less the version.
LANGUAGE_INFO = {k: v for k, v in IPythonKernel.language_info.items() if k != "version"}


class Kernel(IPythonKernel):
    language_info = LANGUAGE_INFO


def main() -> None:
    IPKernelApp.launch_instance(kernel_class=Kernel)


if __name__ == "__main__":
    main()
