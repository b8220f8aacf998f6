# Apache-2.0
"""The project's stdout callback: ansible.builtin.default without async poll noise, with timings."""

from __future__ import annotations

DOCUMENTATION = """
    name: readable
    type: stdout
    short_description: default output without async poll lines, with task and stage timings
    description:
        - The output of ansible.builtin.default, less the C(ASYNC POLL ... finished=0) line it prints every poll
          of a running async task (the validation measurements poll every few seconds for minutes).
        - The task timings of ansible.posix.profile_tasks (a timestamp after each task banner, the slowest tasks
          at the end), unless profile_tasks is enabled as a callback of its own.
        - At the end, the wall time of each stage (the play name before C( | ), then the role, and for roles/validate
          its stage by the task file), from the same
          stage accounting as C(python -m validation run) (validation/progress.py). That recap needs the project's
          C(validation) package importable by the controller's Python (the bundle's checkout, or the project
          installed); without it, as from the collection alone, the recap is left out and the rest is printed.
        - A site that wants machine-readable output sets another stdout callback (e.g. ansible.builtin.json);
          none of this text is printed then.
    extends_documentation_fragment:
      - default_callback
      - result_format_callback
    requirements:
      - set as stdout_callback in ansible.cfg, with callback_plugins = plugins/callback (the bundle), or
        stdout_callback = powerscale_dgx.ra.readable (the collection)
"""

from datetime import UTC, datetime  # noqa: E402

from ansible import constants as C  # noqa: E402
from ansible.plugins.callback.default import CallbackModule as DefaultCallback  # noqa: E402
from ansible.plugins.loader import callback_loader  # noqa: E402

try:  # the project's stage accounting; absent where the callback runs from the collection without the project
    from validation import progress
except ImportError:
    progress = None


PROFILE_TASKS = "ansible.posix.profile_tasks"


class CallbackModule(DefaultCallback):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "stdout"
    CALLBACK_NAME = "readable"

    def __init__(self):
        super().__init__()
        self._profile = None
        self._progress = progress.Progress() if progress else None
        self._play_name = None

    def set_options(self, task_keys=None, var_options=None, direct=None):
        super().set_options(task_keys=task_keys, var_options=var_options, direct=direct)
        enabled = {name.strip() for name in (C.CALLBACKS_ENABLED or [])}
        if self._profile is None and not enabled & {PROFILE_TASKS, "profile_tasks"}:
            self._profile = callback_loader.get(PROFILE_TASKS)
            self._profile.set_options()

    def _record(self, event, task=None):
        if progress is None:
            return
        role = task._role.get_name(include_role_fqcn=False) if task is not None and task._role else None
        data = {"play": self._play_name, "role": role, "task_path": task.get_path() if task is not None else None}
        created = datetime.now(UTC).isoformat()
        self._progress = progress.advance(self._progress, {"event": event, "created": created, "event_data": data})

    def v2_playbook_on_play_start(self, play):
        super().v2_playbook_on_play_start(play)
        self._play_name = play.get_name().strip()
        self._record("playbook_on_play_start")

    def v2_playbook_on_task_start(self, task, is_conditional):
        super().v2_playbook_on_task_start(task, is_conditional)
        self._record("playbook_on_task_start", task)
        if self._profile:
            self._profile.v2_playbook_on_task_start(task, is_conditional)

    def v2_playbook_on_handler_task_start(self, task):
        super().v2_playbook_on_handler_task_start(task)
        self._record("playbook_on_task_start", task)
        if self._profile:
            self._profile.v2_playbook_on_handler_task_start(task)

    def v2_runner_on_async_poll(self, result):
        """Silent: the task's banner is up, and its result comes when it finishes."""

    def v2_playbook_on_stats(self, stats):
        super().v2_playbook_on_stats(stats)
        self._record("playbook_on_stats")
        if self._profile:
            self._profile.v2_playbook_on_stats(stats)
        lines = progress.stage_report(self._progress) if progress else []
        if lines:
            self._display.banner("STAGE RECAP")
            for line in lines:
                self._display.display(line)
