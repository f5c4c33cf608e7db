"""A pytest plugin the Makefile names before nbval's: nbval imports nbformat and, through it,
jsonschema, which builds 39 lark grammars at import for its IRI format checker where
`rfc3987_syntax` is installed (JupyterLab's jsonschema[format-nongpl] brings it): a second of CPU
or more in every test process, the controller and each worker, for a format no notebook schema
uses. The kit's report blocks it the same way for its own import (report/build.py notebook_tools);
here the block stays for the run."""

import sys

if "jsonschema" not in sys.modules:
    sys.modules.setdefault("rfc3987_syntax", None)  # an import of it raises ImportError, which jsonschema expects
