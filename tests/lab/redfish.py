#!/usr/bin/python3
# A test stand-in for a Redfish BMC, written for provisiond's lab: it speaks
# the subset of DMTF Redfish's public API that provisiond uses (ServiceRoot,
# the Systems collection, one ComputerSystem with its Boot override and its
# Reset action) and switches a lab machine with the lab's power program.
"""Redfish BMC stand-in (HTTPS) for the lab.

    redfish.py --listen ADDR --port PORT --cert PEM --key PEM --user USER
               --password-file FILE --node HOSTNAME --mac MAC
               --power PROGRAM --log FILE [--allow On,ForceOff,...]

GET /redfish/v1/ needs no authentication; everything else needs HTTP Basic
with USER and the password in FILE (one line), or answers 401 with
WWW-Authenticate. /redfish/v1/Systems lists one system, /redfish/v1/Systems/
HOSTNAME, whose PowerState is `PROGRAM status HOSTNAME MAC`. PATCH it with
{"Boot": {"BootSourceOverrideEnabled": "Once", "BootSourceOverrideTarget":
"Pxe"}} (Disabled|Once|Continuous, None|Pxe|Hdd) to set the boot override.
POST {"ResetType": T} to its Actions/ComputerSystem.Reset: On runs PROGRAM
on, ForceOff and GracefulShutdown off, ForceRestart and PowerCycle cycle,
only the types --allow names (all five by default). PATCH and Reset answer
204. With a Pxe override on or cycle runs with LAB_BOOT_ONCE=pxe in the
environment; a Once override is Disabled/None again after any on or cycle,
as after a real boot. Errors are Redfish error bodies; --log gets one line
per request, without the password.
"""

import base64
import hmac
import json
import ssl
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

import standin

ROOT = '/redfish/v1'
RESET_ACTIONS = {'On': 'on', 'ForceOff': 'off', 'GracefulShutdown': 'off',
                 'ForceRestart': 'cycle', 'PowerCycle': 'cycle'}
BOOT_VALUES = {'BootSourceOverrideEnabled': ('Disabled', 'Once', 'Continuous'),
               'BootSourceOverrideTarget': ('None', 'Pxe', 'Hdd')}
NO_OVERRIDE = {'BootSourceOverrideEnabled': 'Disabled',
               'BootSourceOverrideTarget': 'None'}


class RedfishError(Exception):
    """An HTTP error status with a Redfish error body."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


class System:
    """The one ComputerSystem: a lab node switched by PROGRAM."""

    def __init__(self, args):
        self.args = args
        self.path = f'{ROOT}/Systems/{args.node}'
        self.boot = dict(NO_OVERRIDE)
        self.lock = threading.Lock()  # one PROGRAM at a time, boot with it

    def run(self, action, boot_once=False):
        try:
            return standin.run(self.args, action, boot_once)
        except standin.PowerError as e:
            why = e.stderr.strip() or f'exit status {e.status}'
            raise RedfishError(500, f'{action} failed: {why}') from None

    def resource(self):
        with self.lock:
            state = self.run('status')
            boot = dict(self.boot)
        if state not in ('on', 'off'):
            raise RedfishError(500, f'status printed {state!r}')
        boot['BootSourceOverrideTarget@Redfish.AllowableValues'] = list(
            BOOT_VALUES['BootSourceOverrideTarget'])
        reset = f'{self.path}/Actions/ComputerSystem.Reset'
        return {
            '@odata.id': self.path,
            '@odata.type': '#ComputerSystem.v1_13_0.ComputerSystem',
            'Id': self.args.node,
            'Name': self.args.node,
            'PowerState': state.capitalize(),
            'Boot': boot,
            'Actions': {'#ComputerSystem.Reset': {
                'target': reset,
                'ResetType@Redfish.AllowableValues': self.args.allow}},
        }

    def patch(self, body):
        boot = body.get('Boot')
        if set(body) != {'Boot'} or not isinstance(boot, dict):
            raise RedfishError(400, 'only Boot can be patched')
        for key, value in boot.items():
            if key not in BOOT_VALUES:
                raise RedfishError(400, f'Boot/{key} cannot be patched')
            if value not in BOOT_VALUES[key]:
                raise RedfishError(400, f'Boot/{key} must be one of '
                                   f'{", ".join(BOOT_VALUES[key])}')
        with self.lock:
            self.boot.update(boot)
            return 'boot override ' + '/'.join(self.boot.values())

    def reset(self, body):
        reset_type = body.get('ResetType')
        if reset_type not in self.args.allow:
            raise RedfishError(400, f'ResetType must be one of '
                               f'{", ".join(self.args.allow)}')
        action = RESET_ACTIONS[reset_type]
        with self.lock:
            enabled = self.boot['BootSourceOverrideEnabled']
            boots = action != 'off'
            pxe = (boots and enabled != 'Disabled' and
                   self.boot['BootSourceOverrideTarget'] == 'Pxe')
            out = self.run(action, boot_once=pxe)
            if boots and enabled == 'Once':
                self.boot = dict(NO_OVERRIDE)
        return (f'{reset_type}: {action}{" LAB_BOOT_ONCE=pxe" if pxe else ""}'
                f': {out}')


class Handler(BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    disable_nagle_algorithm = True  # headers and body are two writes

    def do_GET(self):
        self.serve()

    def do_PATCH(self):
        self.serve()

    def do_POST(self):
        self.serve()

    def serve(self):
        server = self.server
        body = self.rfile.read(int(self.headers.get('Content-Length') or 0))
        path = urlsplit(self.path).path.rstrip('/')
        try:
            status, doc, what = self.route(server.system, path, body)
        except RedfishError as e:
            status, what = e.status, str(e)
            doc = {'error': {'code': 'Base.1.0.GeneralError',
                             'message': what}}
        data = json.dumps(doc).encode() if doc is not None else b''
        self.send_response(status)
        if status == 401:
            self.send_header('WWW-Authenticate', 'Basic realm="Redfish"')
        self.send_header('OData-Version', '4.0')
        if status != 204:
            self.send_header('Content-Type', 'application/json; charset=utf-8')
            self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        standin.log(server.args.log,
                    f'{self.command} {path or "/"} {status} {what}')

    def route(self, system, path, body):
        """Returns (status, JSON document or None, what was done)."""
        if path == ROOT and self.command == 'GET':
            return 200, service_root(), 'service root'
        if not self.authorized():
            raise RedfishError(401, 'wrong or no credentials (HTTP Basic)')
        routes = {
            ('GET', f'{ROOT}/Systems'): lambda: (
                200, systems(system.path), 'systems'),
            ('GET', system.path): lambda: (
                200, system.resource(), 'system'),
            ('PATCH', system.path): lambda: (
                204, None, system.patch(json_object(body))),
            ('POST', f'{system.path}/Actions/ComputerSystem.Reset'): lambda: (
                204, None, system.reset(json_object(body))),
        }
        if (self.command, path) in routes:
            return routes[self.command, path]()
        if path == ROOT or path in {p for _, p in routes}:
            raise RedfishError(405, f'{self.command} not allowed here')
        raise RedfishError(404, f'no resource at {path}')

    def authorized(self):
        scheme, _, value = self.headers.get('Authorization', '').partition(' ')
        if scheme.lower() != 'basic':
            return False
        try:
            pair = base64.b64decode(value, validate=True).decode()
        except ValueError:  # not base64, not UTF-8
            return False
        user, _, password = pair.partition(':')
        return (user == self.server.args.user and
                hmac.compare_digest(password.encode(),
                                    self.server.password.encode()))

    def log_message(self, format, *args):
        """Silent: --log has one line per request."""


def json_object(body):
    try:
        value = json.loads(body or b'{}')
    except ValueError as e:
        raise RedfishError(400, f'the body is no JSON: {e}') from None
    if not isinstance(value, dict):
        raise RedfishError(400, 'the body is no JSON object')
    return value


def service_root():
    return {'@odata.id': f'{ROOT}/',
            '@odata.type': '#ServiceRoot.v1_5_0.ServiceRoot',
            'Id': 'RootService', 'Name': 'Root Service',
            'RedfishVersion': '1.6.0',
            'Systems': {'@odata.id': f'{ROOT}/Systems'}}


def systems(member):
    return {'@odata.id': f'{ROOT}/Systems',
            '@odata.type': '#ComputerSystemCollection.'
                           'ComputerSystemCollection',
            'Name': 'Computer System Collection',
            'Members@odata.count': 1,
            'Members': [{'@odata.id': member}]}


class TLSServer(ThreadingHTTPServer):
    """Each connection's TLS handshake in its own thread, not the accept's."""

    def __init__(self, address, context):
        super().__init__(address, Handler)
        self.context = context

    def finish_request(self, request, client_address):
        request.settimeout(30)
        try:
            tls = self.context.wrap_socket(request, server_side=True)
        except OSError as e:  # ssl.SSLError too
            print(f'redfish.py: TLS with {client_address[0]}: {e}',
                  file=sys.stderr)
            return
        with tls:
            super().finish_request(tls, client_address)


def main():
    parser = standin.parser(__doc__)
    parser.add_argument('--cert', required=True, help='TLS certificate, PEM')
    parser.add_argument('--key', required=True, help='its key, PEM')
    parser.add_argument('--user', required=True, help='the Basic user')
    parser.add_argument('--password-file', required=True,
                        help='its password, one line')
    standin.add_node(parser, 'on|off|cycle|status HOST MAC')
    parser.add_argument('--log', required=True, help='request log')
    parser.add_argument('--allow', default=','.join(RESET_ACTIONS),
                        help='the ResetTypes offered (default: %(default)s)')
    args = parser.parse_args()
    args.allow = args.allow.split(',')
    if not set(args.allow) <= set(RESET_ACTIONS):
        parser.error(f'--allow takes {", ".join(RESET_ACTIONS)}')
    password = standin.password(parser, args)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(args.cert, args.key)
    server = TLSServer((args.listen, args.port), context)
    server.args, server.password = args, password
    server.system = System(args)
    standin.serve(server.serve_forever)


if __name__ == '__main__':
    main()
