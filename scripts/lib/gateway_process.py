"""The gateway process as /proc shows it: resident memory, threads, open descriptors.

Shared by scripts/measure-connection-churn and scripts/measure-idle-memory.
"""

import os


def proc_status(pid):
    """VmRSS, RssAnon, RssFile, VmHWM, Threads from /proc/PID/status (KiB / count)."""
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "RssAnon", "RssFile", "RssShmem", "VmHWM", "VmSize", "Threads"):
                out[key] = int(value.split()[0])
    return out


def fd_count(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))
