"""The report: the notebooks run into HTML pages (build.py) in kernels shared by the pages
(kernels.py), the index card (index.py), the cache of loaded incidents every page reads
(cache.py), and what a notebook's cells call to show things (notebook.py).

May import (docs/architecture.md, "Who may import whom"): everything below it (the contracts, clock/, loaders/, store/, model/, detect/,
analysis/, present/) and the package's public API.
"""
