# The part the lab's power stand-ins (plug.py, redfish.py, bmc.py) share:
# their common arguments, the lab's power program, the request log.
"""Shared by the lab's power stand-ins: imported, not run."""

import argparse
import os
import subprocess
import time


class PowerError(Exception):
    """PROGRAM failed, or printed what it should not: str() says why.

    Where PROGRAM failed, why is its stderr stripped, or `ACTION exited with
    STATUS` if it printed none; stderr (whole) and status are kept.
    """

    def __init__(self, why, stderr='', status=None):
        super().__init__(why)
        self.stderr, self.status = stderr, status


def parser(doc):
    """A parser described by the first line of doc, --listen and --port."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument('--listen', required=True, help='address to bind')
    parser.add_argument('--port', required=True, type=int)
    return parser


def add_node(parser, usage):
    """--node, --mac and --power, whose PROGRAM is run as `PROGRAM usage`."""
    parser.add_argument('--node', required=True, help="the node's hostname")
    parser.add_argument('--mac', required=True, help="the node's MAC")
    parser.add_argument('--power', required=True,
                        help=f'program: PROGRAM {usage}')


def password(parser, args):
    """The password in --password-file's first line; none is an error."""
    with open(args.password_file, encoding='utf-8') as f:
        line = f.readline().rstrip('\r\n')
    if not line:
        parser.error(f'{args.password_file} holds no password')
    return line


def run(args, action, boot_once=False):
    """Runs `PROGRAM action HOSTNAME MAC`, with LAB_BOOT_ONCE=pxe in the
    environment if boot_once; returns its output stripped, or raises
    PowerError if it fails."""
    cmd = [args.power, action, args.node, args.mac]
    env = dict(os.environ, LAB_BOOT_ONCE='pxe') if boot_once else None
    done = subprocess.run(cmd, capture_output=True, text=True, env=env,
                          check=False)
    if done.returncode != 0:
        raise PowerError(done.stderr.strip() or
                         f'{action} exited with {done.returncode}',
                         done.stderr, done.returncode)
    return done.stdout.strip()


def log(path, line):
    """Appends `TIMESTAMP line` to the request log at path."""
    stamp = time.strftime('%Y-%m-%dT%H:%M:%S')
    with open(path, 'a', encoding='utf-8') as f:
        f.write(f'{stamp} {line}\n')  # one append, whole


def serve(forever):
    """Calls forever(), a server's loop, until Ctrl-C, quietly."""
    try:
        forever()
    except KeyboardInterrupt:
        pass
