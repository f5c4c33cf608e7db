"""Live stack dumps as the tools people use print them, for the tests of their reading."""

# py-spy's dump of a process hung building a JIT extension (DeepSpeedExamples #302, its frames)
PY_SPY_DUMP = """Process 46930: /usr/bin/python -u main.py --local_rank=0
Python v3.11.2 (/usr/bin/python3.11)

Thread 46930 (idle): "MainThread"
    wait (torch/utils/file_baton.py:42)
    _jit_compile (torch/utils/cpp_extension.py:1522)
    initialize (deepspeed/__init__.py:156)
    main (main.py:273)
    <module> (main.py:328)
Thread 47073 (idle): "Thread-1"
    wait (threading.py:324)
    run (tqdm/_monitor.py:60)

Using /root/.cache/torch_extensions/py311_cu117 as PyTorch extensions root...
"""
