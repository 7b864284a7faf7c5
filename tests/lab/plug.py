#!/usr/bin/python3
# A test stand-in for a Tasmota smart plug, written for provisiond's lab: it
# speaks the subset of Tasmota's public HTTP command API that provisiond uses
# and switches a lab machine with the lab's power program.
"""Tasmota smart plug stand-in (HTTP) for the lab.

    plug.py --listen ADDR --port PORT --node HOSTNAME --mac MAC
            --power PROGRAM --password-file FILE --log FILE

GET /cm?cmnd=COMMAND&user=admin&password=PASSWORD, where COMMAND is (in any
case) Power or Power1, alone (the state) or with On, Off, Toggle, 1, 0 or 2,
runs `PROGRAM on|off|status HOSTNAME MAC` and answers {"POWER":"ON"} or
{"POWER":"OFF"}, named as the command was (Power1 -> "POWER1"; a real
one-relay Tasmota may say "POWER" to both: SetOption26). Like Tasmota: another
argument shows the state, another command answers {"Command":"Unknown"} (200),
a wrong user or password answers 401 {"WARNING":"Need user=...&password=..."}.
PROGRAM failing answers 500 with its stderr. FILE holds the password (one
line); --log gets one line per request, without the password.
"""

import hmac
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import standin

USER = 'admin'  # Tasmota's web user name is fixed
NEED_AUTH = {'WARNING': 'Need user=<username>&password=<password>'}
ARGUMENTS = {'ON': 'on', '1': 'on', 'OFF': 'off', '0': 'off',
             'TOGGLE': 'toggle', '2': 'toggle'}


def to_json(value):
    return json.dumps(value, separators=(',', ':'))  # compact, as Tasmota's


class Plug:
    """One relay in front of one node, switched by PROGRAM."""

    def __init__(self, args, password):
        self.args = args
        self.password = password
        self.lock = threading.Lock()  # one PROGRAM at a time, like one relay

    def state(self):
        out = standin.run(self.args, 'status')
        if out not in ('on', 'off'):
            raise standin.PowerError(f'status printed {out!r}, not on or off')
        return out

    def power(self, argument):
        """Switches as `argument` says; returns (state, what was done)."""
        action = ARGUMENTS.get(argument)
        with self.lock:
            if action == 'toggle':
                action = 'off' if self.state() == 'on' else 'on'
            if action is None:
                state = self.state()
                return state, f'status: {state}'
            return action, f'{action}: {standin.run(self.args, action)}'

    def log(self, line):
        standin.log(self.args.log, line)


class Handler(BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    disable_nagle_algorithm = True  # headers and body are two writes

    def do_GET(self):
        plug = self.server.plug
        url = urlsplit(self.path)
        query = parse_qs(url.query)
        cmnd = query.get('cmnd', [''])[0]
        request = f'GET {url.path} cmnd={cmnd!r}'
        if url.path != '/cm':
            self.reply(404, 'text/plain', 'not found\n')
            plug.log(f'{request} 404 not found')
            return
        user = query.get('user', [''])[0]
        password = query.get('password', [''])[0].encode()
        if user != USER or not hmac.compare_digest(password,
                                                   plug.password.encode()):
            self.reply(401, 'application/json', to_json(NEED_AUTH))
            plug.log(f'{request} 401 wrong user or password')
            return
        words = cmnd.split(None, 1)
        name = words[0].upper() if words else ''
        if name not in ('POWER', 'POWER1'):
            self.reply(200, 'application/json',
                       to_json({'Command': 'Unknown'}))
            plug.log(f'{request} 200 unknown command')
            return
        argument = words[1].strip().upper() if len(words) > 1 else ''
        try:
            state, what = plug.power(argument)
        except standin.PowerError as e:
            body = e.stderr or f'{e}\n'  # PROGRAM's stderr whole
            self.reply(500, 'text/plain', body)
            plug.log(f'{request} 500 failed: {body.strip()}')
            return
        self.reply(200, 'application/json',
                   to_json({name: state.upper()}))
        plug.log(f'{request} 200 {what}')

    def reply(self, status, content_type, body):
        data = body.encode()
        self.send_response(status)
        self.send_header('Content-Type', content_type)
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format, *args):
        """Silent: --log has each request, and this line had the password."""


def main():
    parser = standin.parser(__doc__)
    standin.add_node(parser, 'on|off|status HOSTNAME MAC')
    parser.add_argument('--password-file', required=True,
                        help="the plug's web password, one line")
    parser.add_argument('--log', required=True, help='request log')
    args = parser.parse_args()
    password = standin.password(parser, args)
    server = ThreadingHTTPServer((args.listen, args.port), Handler)
    server.plug = Plug(args, password)
    standin.serve(server.serve_forever)


if __name__ == '__main__':
    main()
