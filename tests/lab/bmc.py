#!/usr/bin/python3
# A test stand-in for an IPMI BMC, written for provisiond's lab: it speaks the
# subset of IPMI 2.0 over LAN (RMCP+) that provisiond uses through ipmitool
# (chassis power on|off|cycle|reset|soft|status, chassis bootdev), on Debian's
# python3-pyghmi, and switches a lab machine with the lab's power program.
"""IPMI BMC stand-in (UDP, RMCP+) for the lab, on pyghmi.

    bmc.py --listen ADDR --port PORT --user USER --password-file FILE
           --node HOSTNAME --mac MAC --power PROGRAM --log FILE

Binds ADDR:PORT only. Talks to `ipmitool -I lanplus -H ADDR -p PORT -U USER
-E` (IPMI_PASSWORD in the environment); pyghmi offers cipher suite 3 alone,
which ipmitool 1.8.19 picks by itself (-C 3 works too, -C 17 does not).
Power status runs `PROGRAM status HOSTNAME MAC`; on, off, soft (off), cycle
and reset (cycle) are accepted at once and run PROGRAM in order in a worker,
as a BMC carries out a chassis control after answering it (ipmitool resends
a request unanswered after a second, which a slow PROGRAM would run twice);
a status waits for them. `chassis bootdev pxe` makes the next on, cycle or
reset run PROGRAM with LAB_BOOT_ONCE=pxe; any bootdev lasts one boot only
(pyghmi does not pass on options=persistent). An unknown user gets no answer
(pyghmi's way; ipmitool gives up after about 14 s), a wrong password is
refused at once. --log gets one line per request, without the password.
"""

import queue
import threading

from pyghmi.ipmi import bmc

import standin

BOOTING = ('on', 'cycle')  # the actions that boot the node


class LabBmc(bmc.Bmc):
    """A BMC whose chassis is a lab node switched by PROGRAM."""

    def __init__(self, args, password):
        super().__init__({args.user: password}, port=args.port,
                         address=args.listen)
        self.args = args
        self.bootdev = 'default'  # pyghmi's names: network, hd, default...
        self.jobs = queue.Queue()
        threading.Thread(target=self.work, daemon=True).start()

    def log(self, line):
        standin.log(self.args.log, line)

    def control(self, request, action):
        """Queues `action`; a booting one takes the boot device with it."""
        pxe = action in BOOTING and self.bootdev == 'network'
        if action in BOOTING:
            self.bootdev = 'default'
        self.jobs.put((request, action, pxe))
        return 0  # IPMI completion code: done

    def work(self):
        while True:
            request, action, pxe = self.jobs.get()
            what = f'{action}{" LAB_BOOT_ONCE=pxe" if pxe else ""}'
            try:
                out = standin.run(self.args, action, pxe)
                self.log(f'{request}: {what}: {out}')
            except standin.PowerError as e:
                self.log(f'{request}: {what} failed: {e}')
            self.jobs.task_done()

    def get_power_state(self):
        self.jobs.join()  # the state once the controls sent before are done
        try:
            state = standin.run(self.args, 'status')
        except standin.PowerError as e:
            self.log(f'get chassis status failed: {e}')
            raise
        if state not in ('on', 'off'):
            self.log(f'get chassis status: {state!r}, not on or off')
            raise standin.PowerError(f'status printed {state!r}')
        self.log(f'get chassis status: {state}')
        return state

    def power_on(self):
        return self.control('chassis control power up', 'on')

    def power_off(self):
        return self.control('chassis control power down', 'off')

    def power_shutdown(self):
        return self.control('chassis control soft shutdown', 'off')

    def power_cycle(self):
        return self.control('chassis control power cycle', 'cycle')

    def power_reset(self):
        return self.control('chassis control hard reset', 'cycle')

    def get_boot_device(self):
        self.log(f'get boot device: {self.bootdev}')
        return self.bootdev

    def set_boot_device(self, bootdevice):
        self.bootdev = bootdevice
        self.log(f'set boot device: {bootdevice}, for the next boot')


def main():
    parser = standin.parser(__doc__)
    parser.add_argument('--user', required=True, help='the IPMI user')
    parser.add_argument('--password-file', required=True,
                        help='its password, one line')
    standin.add_node(parser, 'on|off|cycle|status HOST MAC')
    parser.add_argument('--log', required=True, help='request log')
    args = parser.parse_args()
    password = standin.password(parser, args)
    server = LabBmc(args, password)
    standin.serve(server.listen)


if __name__ == '__main__':
    main()
