"""Telling a person: the message, the streak rule, the desktop, the webhook, the ping and the miss log.

The runner calls ``send.after_run`` after every run (by hand or scheduled); the project tick calls the
other entry points of ``send``. Nothing here imports the engine or the scheduler.
"""
