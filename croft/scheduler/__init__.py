"""The scheduler: the due policy and the setting rule here, and one room per process that runs it.

``tick/`` runs inside a project's ``croft tick``, ``user/`` inside the per-user ``croft tick --all`` and
``croft serve``, ``jobs/`` installs the OS job, ``control/`` serves ``croft schedule`` and ``croft doctor``.
"""
