"""module_utils/dgx_sysctl: the sysctl.d file and the live values planned in one call (library/dgx_sysctl)."""

from __future__ import annotations

import pytest
from ansible.module_utils.dgx_sysctl import module_pending, normalize, plan, proc_path, render_file

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


# The files exactly as community.general.modprobe (persistent: present) writes them: create_module_file and
# module_options_file_content of plugins/modules/modprobe.py (community.general in the pinned ansible package).
MODPROBE_LOAD = {"/etc/modules-load.d/sunrpc.conf": "sunrpc\n"}
MODPROBE_OPTIONS = {"/etc/modprobe.d/sunrpc.conf": "options sunrpc tcp_slot_table_entries=128\n"}


def test_module_converged_by_community_modprobe_is_not_pending():
    assert module_pending("sunrpc", "tcp_slot_table_entries=128", True, MODPROBE_LOAD, MODPROBE_OPTIONS) == []


def test_module_not_loaded_or_not_persistent_or_other_options_is_pending():
    assert module_pending("sunrpc", "tcp_slot_table_entries=128", False, MODPROBE_LOAD, MODPROBE_OPTIONS) == [
        "sunrpc is not loaded"]
    assert module_pending("sunrpc", "tcp_slot_table_entries=128", True, {}, MODPROBE_OPTIONS) == [
        "sunrpc is not in /etc/modules-load.d (not loaded at boot)"]
    commented = {"/etc/modules-load.d/sunrpc.conf": "# sunrpc\n"}
    assert module_pending("sunrpc", "tcp_slot_table_entries=128", True, commented, MODPROBE_OPTIONS)
    other = {"/etc/modprobe.d/sunrpc.conf": "options sunrpc tcp_slot_table_entries=16\n"}
    assert module_pending("sunrpc", "tcp_slot_table_entries=128", True, MODPROBE_LOAD, other) == [
        "/etc/modprobe.d gives sunrpc options ['tcp_slot_table_entries=16'], wanted ['tcp_slot_table_entries=128']"]
    # an option line of another module, or a commented one, does not count
    foreign = {"/etc/modprobe.d/x.conf": "options nfs tcp_slot_table_entries=128\n#options sunrpc a=1\n"}
    assert module_pending("sunrpc", "", True, MODPROBE_LOAD, foreign) == []
    assert module_pending("sunrpc", "tcp_slot_table_entries=128", True, MODPROBE_LOAD, foreign)
