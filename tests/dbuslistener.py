"""A stand-in notification daemon for tests: owns org.freedesktop.Notifications on the session bus given by
DBUS_SESSION_BUS_ADDRESS and appends every Notify call, as one JSON line, to the file named by argv[1].

Run with the system python (python3-dbus and python3-gi live there, not in the venv). Prints ``ready``
once it owns the name, so the test knows when notify-send can reach it.
"""

import json
import sys

import dbus
import dbus.service
from dbus.mainloop.glib import DBusGMainLoop
from gi.repository import GLib

INTERFACE = "org.freedesktop.Notifications"


class Notifications(dbus.service.Object):
    def __init__(self, bus, out):
        super().__init__(bus, "/org/freedesktop/Notifications")
        self.out = out
        self.next_id = 0

    @dbus.service.method(INTERFACE, in_signature="susssasa{sv}i", out_signature="u")
    def Notify(self, app, replaces, icon, summary, body, actions, hints, timeout):
        self.next_id += 1
        with open(self.out, "a", encoding="utf-8") as handle:
            line = {"app": str(app), "summary": str(summary), "body": str(body), "icon": str(icon)}
            handle.write(json.dumps(line, ensure_ascii=False) + "\n")
        return dbus.UInt32(self.next_id)

    @dbus.service.method(INTERFACE, out_signature="as")
    def GetCapabilities(self):
        return ["body", "body-markup"]

    @dbus.service.method(INTERFACE, out_signature="ssss")
    def GetServerInformation(self):
        return ("croft-test", "croft", "1", "1.2")

    @dbus.service.method(INTERFACE, in_signature="u")
    def CloseNotification(self, notification_id):
        return None


def main():
    DBusGMainLoop(set_as_default=True)
    bus = dbus.SessionBus()
    name = dbus.service.BusName(INTERFACE, bus, do_not_queue=True)
    Notifications(bus, sys.argv[1])
    print("ready", name.get_name(), flush=True)
    GLib.MainLoop().run()


if __name__ == "__main__":
    main()
