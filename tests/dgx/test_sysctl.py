"""module_utils/dgx_sysctl: the sysctl.d file and the live values planned in one call (library/dgx_sysctl)."""

from __future__ import annotations

import pytest
from ansible.module_utils.dgx_sysctl import normalize, plan, proc_path, render_file

WANT = {"net.core.rmem_max": 268435456, "net.ipv4.tcp_rmem": "4096 87380 134217728"}
LIVE_OK = {"net.core.rmem_max": "268435456\n", "net.ipv4.tcp_rmem": "4096\t87380\t134217728\n"}
FILE_OK = "net.core.rmem_max=268435456\nnet.ipv4.tcp_rmem=4096 87380 134217728\n"


def test_kernel_tabs_equal_inventory_spaces():
    assert normalize("4096\t87380\t134217728\n") == normalize("4096 87380  134217728")


def test_converged_node_plans_nothing():
    todo = plan(FILE_OK, LIVE_OK, WANT)
    assert not todo.changed and todo.file_text is None and todo.live == {}


def test_live_drift_alone_is_set_live_and_file_untouched():
    todo = plan(FILE_OK, {**LIVE_OK, "net.core.rmem_max": "212992\n"}, WANT)
    assert todo.file_text is None
    assert todo.live == {"net.core.rmem_max": ("212992", "268435456")}


def test_absent_file_is_written_even_when_live_is_right():
    todo = plan(None, LIVE_OK, WANT)
    assert todo.changed and todo.file_text == FILE_OK and todo.live == {}


def test_file_keeps_other_keys_and_comments_rewrites_ours_once():
    existing = "# site tuning\nvm.swappiness = 10\nnet.core.rmem_max = 1\nnet.core.rmem_max=2\n"
    text = render_file(existing, WANT)
    assert text == (
        "# site tuning\nvm.swappiness = 10\nnet.core.rmem_max=268435456\nnet.ipv4.tcp_rmem=4096 87380 134217728\n"
    )


def test_file_written_by_ansible_posix_sysctl_reads_unchanged():
    # The lab's DGX files as ansible.posix.sysctl wrote them before this module existed: no rewrite.
    assert plan(FILE_OK, LIVE_OK, WANT).file_text is None


@pytest.mark.parametrize(
    ("key", "path"),
    [("net.core.rmem_max", "/proc/sys/net/core/rmem_max"), ("sunrpc/tcp_slot_table_entries",
                                                           "/proc/sys/sunrpc/tcp_slot_table_entries")],
)
def test_proc_path(key, path):
    assert proc_path(key) == path


@pytest.mark.parametrize("key", ["", "net..core", "../../etc/passwd", "net/../../x"])
def test_proc_path_refuses_escapes(key):
    with pytest.raises(ValueError, match="not a valid name"):
        proc_path(key)
