# provisiond's stdout callback for ansible-playbook. provisiond writes it
# into each run's private folder and reads what it prints: one line per
# event, "@@provisiond " and a JSON object, so per-host task results land in
# provisiond's runs and tasks as they happen (status, changed, output,
# duration), as its native runner records them. Lines without the prefix are
# Ansible's own (errors, warnings) and are kept as the run's output.
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = """
    name: provisiond
    type: stdout
    short_description: task results as JSON lines for provisiond
    description: One line per task result and a recap, read by provisiond.
"""

import json
import sys
import time

from ansible.plugins.callback import CallbackBase

PREFIX = "@@provisiond "
TAIL = 4096


def _text(value):
    if value is None:
        return ""
    if isinstance(value, (list, tuple)):
        return "\n".join(_text(v) for v in value)
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True, default=str)
    return str(value)


def _task_name(task):
    # The task's own name, as provisiond's native runner records it (Ansible's
    # get_name() prefixes a role's tasks with "role : ").
    name = task.name.strip() if task.name else ""
    return name or task.get_name().strip()


def _tail(value):
    text = _text(value)
    return text[-TAIL:] if len(text) > TAIL else text


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "stdout"
    CALLBACK_NAME = "provisiond"

    def __init__(self):
        super(CallbackModule, self).__init__()
        self._play = ""
        self._playbook = ""
        self._started = {}  # (host, task uuid) -> monotonic start

    def _emit(self, event):
        sys.stdout.write(PREFIX + json.dumps(event, default=str) + "\n")
        sys.stdout.flush()

    def v2_playbook_on_start(self, playbook):
        self._playbook = getattr(playbook, "_file_name", "") or ""

    def v2_playbook_on_play_start(self, play):
        self._play = play.get_name().strip()
        self._emit({"event": "play", "play": self._play})

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._emit({"event": "task", "task": _task_name(task)})

    def v2_playbook_on_handler_task_start(self, task):
        self._emit({"event": "task", "task": _task_name(task), "handler": True})

    def v2_runner_on_start(self, host, task):
        self._started[(host.get_name(), task._uuid)] = time.monotonic()

    def _result(self, result, status, item=None, ignored=False):
        host = result._host.get_name()
        task = result._task
        r = result._result
        start = self._started.get((host, task._uuid))
        event = {
            "event": "result",
            "host": host,
            "play": self._play,
            "playbook": self._playbook,
            "task": _task_name(task),
            "module": task.action,
            "where": task.get_path() or "",
            "status": status,
            "changed": bool(r.get("changed", False)),
            "duration_ms": int((time.monotonic() - start) * 1000) if start else 0,
        }
        if ignored:
            event["ignored"] = True
        if item is not None:
            event["item"] = json.dumps(item, default=str, sort_keys=True)
        # no_log: status only, as the native runner records it.
        if task.no_log or r.get("_ansible_no_log"):
            event["no_log"] = True
        else:
            if "rc" in r and isinstance(r["rc"], int):
                event["rc"] = r["rc"]
            event["stdout"] = _tail(r.get("stdout", ""))
            event["stderr"] = _tail(r.get("stderr", ""))
            msg = r.get("msg", "")
            if not msg and status == "failed" and r.get("exception"):
                msg = _text(r.get("exception")).strip().splitlines()[-1:]
            event["msg"] = _tail(msg)
        self._emit(event)

    def _is_loop(self, result):
        return "results" in result._result and isinstance(result._result["results"], list)

    def v2_runner_on_ok(self, result):
        if self._is_loop(result):
            return  # each item was recorded on its own
        self._result(result, "changed" if result._result.get("changed") else "ok")

    def v2_runner_on_failed(self, result, ignore_errors=False):
        if self._is_loop(result):
            return
        self._result(result, "failed", ignored=ignore_errors)

    def v2_runner_on_skipped(self, result):
        if self._is_loop(result):
            return
        self._result(result, "skipped")

    def v2_runner_on_unreachable(self, result):
        self._result(result, "unreachable")

    def v2_runner_item_on_ok(self, result):
        self._result(result, "changed" if result._result.get("changed") else "ok",
                     result._result.get("_ansible_item_label", result._result.get("item")))

    def v2_runner_item_on_failed(self, result):
        self._result(result, "failed",
                     result._result.get("_ansible_item_label", result._result.get("item")),
                     ignored=bool(result._task.ignore_errors))

    def v2_runner_item_on_skipped(self, result):
        self._result(result, "skipped",
                     result._result.get("_ansible_item_label", result._result.get("item")))

    def v2_playbook_on_stats(self, stats):
        hosts = {}
        for host in sorted(stats.processed.keys()):
            s = stats.summarize(host)
            hosts[host] = {
                "ok": s.get("ok", 0),
                "changed": s.get("changed", 0),
                "failed": s.get("failures", 0),
                "unreachable": s.get("unreachable", 0),
                "skipped": s.get("skipped", 0),
                "rescued": s.get("rescued", 0),
                "ignored": s.get("ignored", 0),
            }
        self._emit({"event": "stats", "hosts": hosts})
