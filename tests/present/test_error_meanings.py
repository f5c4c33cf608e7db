"""What an error means beyond its words (error_meanings.py), said after the line the story
quotes, whatever tool printed it; lines taken from real reports (their threads say the cause)."""

import pytest

import dflash_postmortem as pm
from dflash_postmortem.error_meanings import meaning


def _said(tmp_path, name: str, text: str) -> str:
    (tmp_path / name).write_text(text)
    inc = pm.load_incident(tmp_path)
    return pm.what_happened(inc, pm.detect(inc))[0]


@pytest.mark.parametrize("line, means", [
    # jade-hpc-gpu #194 (a node's GPU, fixed by its admins); NVIDIA/k8s-device-plugin #231; LSSI-ETH/plmfit #40
    ("RuntimeError: CUDA error: uncorrectable ECC error encountered", "a fault of that GPU's hardware"),
    ("Unable to determine the device handle for GPU 0000:C1:00.0: GPU is lost. Reboot the system to recover this GPU",
     "off its PCIe bus"),
    ("slurmstepd: error: NVML: Failed to get usage(15): GPU is lost", "off its PCIe bus"),
    # mozilla/TTS #135 and msr-fiddle/pipedream #76: a container's /dev/shm
    ("ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm).",
     "shared memory (/dev/shm) ran out"),
    ("[8d6bf97c3bf4:3039 :0:3095] Caught signal 7 (Bus error: nonexistent physical address)", "shared memory (/dev/shm)"),
    # FlagEmbedding #635 (docker's default /dev/shm, fixed with --shm-size 6G): torchrun's line of the death
    ("failed (exitcode: -7) local_rank: 0 (pid: 53138) of binary: /usr/bin/python (SIGBUS)", "shared memory (/dev/shm)"),
    # pytorch/ci-infra #490 (a runner pod's /dev/shm, fixed with a tmpfs mount): NCCL's warning, its prefix taken off
    ("Error: failed to extend /dev/shm/nccl-WU88OE to 9637892 bytes, error: No space left on device (28)",
     "shared memory (/dev/shm) ran out"),
    ("terminate called after throwing an instance of 'std::bad_alloc'", "memory (RAM) ran out, not a GPU's"),
    ("[W socket.cpp:401] [c10d] The server socket has failed to bind to [::]:29400 (errno: 98 - Address already in use).",
     "another process held the port"),
    ("torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/NCCLUtils.hpp:268, remote "
     "process exited or there was a network error, NCCL version 2.21.5", "a peer rank or its network connection went away"),
])
def test_a_known_fault_is_said_with_what_it_means(line, means):
    assert means in meaning(line)


def test_an_error_no_table_knows_means_nothing_more():
    assert meaning("RuntimeError: CUDA error: device-side assert triggered") is None
    assert meaning("NVRM: Xid (PCI:0000:61:00): 8, pid=1, name=python, Channel 00000010") is None  # (not in the table)


@pytest.mark.parametrize("line, means", [
    # the kernel's NVRM lines and DCGM's, by the Xid's number (NVIDIA's Xid catalog); from gpud's,
    # NVIDIA/nvidia-docker's and tinygrad's reports in the corpus
    ("NVRM: Xid (PCI:0000:61:00): 45, pid=1496200, name=distprovers-gpu, Ch 0000000a",
     "stopped the GPU work of a process that was ending"),
    ("NVRM: Xid (PCI:0000:61:00): 119, pid=1346198, name=nvidia-smi, Timeout waiting for RPC from GSP!",
     "firmware (GSP) did not answer its driver"),
    ("NVRM: Xid (PCI:0000:01:00): 31, pid=14292, name=python, Ch 00000030, intr 00000000. MMU Fault",
     "a GPU program faulted"),
    ("Xid 79 on GPU 3 (DCGM_FI_DEV_XID_ERRORS)", "fell off its PCIe bus"),
    ("[Sat Oct 12 18:38:44 2024] INFO: task cache_mgr_event:620917 blocked for more than 120 seconds.",
     "waited inside the kernel (state D, which no signal ends)"),
    ("NVRM: Xid (PCI:0000:3b:00): 48, pid=900, name=python, An uncorrectable double bit error", "(ECC)"),
])
def test_an_xid_is_said_with_what_its_number_means(line, means):
    assert means in meaning(line)


def test_a_gpu_error_alone_is_told_as_the_gpus_fault(tmp_path):
    said = _said(tmp_path, "ecc.log", "RuntimeError: CUDA error: uncorrectable ECC error encountered\n")
    assert said == ("No training seen in 1 file: no training step, and none of its rows dated (1 event). What it shows going "
                    "wrong: RuntimeError: CUDA error: uncorrectable ECC error encountered (ecc.log:1). It means a GPU's "
                    "memory had an error it could not correct: a fault of that GPU's hardware, not of the training code.")


def test_a_port_in_use_is_told_where_no_training_is_seen(tmp_path):
    """wenet-e2e/wekws #93: a second `torchrun --standalone` on a host where a run already held
    c10d's port (the file was console text: nothing said went wrong)."""
    said = _said(tmp_path, "train.log",
                 "Start training ...\n"
                 "[W socket.cpp:401] [c10d] The server socket has failed to bind to [::]:29400 (errno: 98 - Address already in use).\n"
                 "[E socket.cpp:435] [c10d] The server socket has failed to listen on any local network address.\n")
    assert "What it shows going wrong: [c10d] The server socket has failed to bind to [::]:29400" in said
    assert said.endswith("It means another process held the port: a run still alive on the same host, or a second "
                         "launch with the same port (or, for a port of the ephemeral range, 32768 and up on Linux, any "
                         "program's outgoing connection).")


def test_a_sigkill_after_the_log_says_memory_ran_out_is_told_as_the_oom_killers(tmp_path):
    """nshepperd/gpt-2 #61: TensorFlow's CPU allocator ran out, then the shell's `Killed`."""
    said = _said(tmp_path, "train.log",
                 "Training...\n"
                 "Resource exhausted: OOM when allocating tensor with shape[1024,50257] and type float on "
                 "/job:localhost/replica:0/task:0/device:CPU:0 by allocator cpu\n"
                 "Killed\n")
    assert "A process died: Killed (SIGKILL). The log says the machine's memory ran out (`Resource exhausted: OOM" in said
    assert "train.log:2): the kernel's OOM killer sends SIGKILL then." in said
    assert "Nothing here says who sent SIGKILL" not in said


def test_nvidia_smi_that_never_answered_gives_no_gpu_sample(tmp_path):
    """pytorch/pytorch #105721: a CI step's retry wrapper printed its timeout where the one-field
    query's answer would be (its `Error: ` was taken for a pdsh host, its words for a driver
    version); now the line is nvidia-smi's failure."""
    (tmp_path / "ci.log").write_text(
        "+ set +e\n"
        "++ nvidia-smi --query-gpu=driver_version --format=csv,noheader --id=0\n"
        "Error: Final attempt failed. Timeout of 600000ms hit\n")
    inc = pm.load_incident(tmp_path)
    assert inc.gpus.empty
    err = inc.events[inc.events["kind"] == "gpu_error"]
    assert err["ref"].tolist() == ["ci.log:3"] and err["smi_error"].tolist() == ["timed_out"]
    assert pm.what_happened(inc, pm.detect(inc))[0].endswith(
        "(ci.log:3). It means nvidia-smi never answered: a driver or a GPU that hung.")


def test_nvidia_smis_error_after_its_prompt_is_read_with_the_kernel_lines_around_it(tmp_path):
    """rwth-i6/returnn #1486: `nvidia-smi` typed at a zsh prompt, its error, then dmesg's PCIe
    lines: the file was not recognised."""
    said = _said(tmp_path, "paste.txt",
                 "user@host ~ % nvidia-smi\n"
                 "Unable to determine the device handle for GPU0000:03:00.0: Unknown Error\n"
                 "[  +0.000316] pcieport 0000:00:03.0: AER: Corrected error received: 0000:00:03.0\n"
                 "[  +0.000005] pcieport 0000:00:03.0: PCIe Bus Error: severity=Corrected, type=Data Link Layer\n")
    assert "What it shows going wrong: Unable to determine the device handle for GPU0000:03:00.0: Unknown Error (paste.txt:2)" in said


def test_an_interrupt_where_no_training_is_seen_is_told(tmp_path):
    """Calamari-OCR/calamari #77: a traceback pasted from its middle, ending in `KeyboardInterrupt`,
    then the operator's further `^C`s: the file was console text and its story said nothing."""
    said = _said(tmp_path, "paste.txt",
                 '  File "/opt/conda/lib/python3.6/threading.py", line 1072, in _wait_for_tstate_lock\n'
                 "    elif lock.acquire(block, timeout):\n"
                 "KeyboardInterrupt\n"
                 " ^C^C^C^C^C^C\n")
    assert said.endswith("What it shows: an interrupt (Ctrl-C, SIGINT) reached it while it was waiting on a lock "
                         "(`elif lock.acquire(block, timeout):`, threading.py:1072): `KeyboardInterrupt` (paste.txt:1).")


@pytest.mark.parametrize(("text", "told", "means", "died"), [
    # facebookresearch/metaseq #52: 1792 of 2048 workers reached the barrier in 30 min
    ("    raise RuntimeError(\nRuntimeError: Timed out initializing process group in store based barrier on rank: 4330, "
     "for key: store_based_barrier_key:522 (world_size=2048, worker_count=1792, timeout=0:30:00)\n",
     "A process died: RuntimeError: Timed out initializing process group in store based barrier",
     "It means not every rank reached the process group's start in time", True),
    # rwth-i6/returnn #1084: Horovod's stall inspector, the process alive and waiting (no death)
    ("[2022-07-20 04:51:42.894382: W horovod/common/stall_inspector.cc:105] One or more tensors were submitted to be "
     "reduced, gathered or broadcasted by subset of ranks and are waiting for remainder of ranks for more than 60 "
     "seconds.\nStalled ranks:\n2: [global_tensor_horovod_sum_have_data]\n",
     "What it shows going wrong: One or more tensors were submitted to be reduced",
     "It means some ranks stopped submitting the collectives the others wait in", False),
    # NVlabs/nvdiffrec #39: a build's lock file a killed build left
    ("Warning: Lock file exists in build directory: 'C:\\Users\\AppData\\Local\\torch_extensions\\renderutils_plugin\\lock'\n",
     "What it shows going wrong: Warning: Lock file exists in build directory",
     "It means a torch extension's build lock was left by a build that was killed while it compiled", False),
])
def test_a_wait_a_reader_knows_the_cause_of_is_told_with_it(tmp_path, text, told, means, died):
    """The store's barrier raises (the process dies of it); Horovod's warning and the lock's are
    said while the process lives on, waiting."""
    said = _said(tmp_path, "paste.log", text)
    assert told in said and means in said and ("process died" in said) == died
