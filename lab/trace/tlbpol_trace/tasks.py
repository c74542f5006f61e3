# SPDX-License-Identifier: MIT
"""The traced tasks (Linux threads) and their thread groups."""

from typing import List, Optional, Tuple

from .aspace import AddressSpace
from .uapi import CLONE_NAMES


class Group:
    """A thread group (a process); its leader is the task holding its pid."""

    __slots__ = ('leader',)

    def __init__(self, leader: 'Task') -> None:
        self.leader = leader


class Task:
    """One traced thread (a Linux task)."""

    __slots__ = ('pid', 'tid', 'group', 'aspace', 'pending', 'parent',
                 'doomed')

    def __init__(self, pid: Optional[int], aspace: AddressSpace,
                 group: Optional[Group] = None,
                 parent: Optional['Task'] = None) -> None:
        self.pid = pid          # None: not known yet (unprefixed lines)
        self.tid: Optional[int] = None  # trace thread id, at its first record
        self.group = group if group is not None else Group(self)
        self.aspace = aspace
        # (name, entry text) of an unfinished call
        self.pending: Optional[Tuple[str, str]] = None
        self.parent = parent
        self.doomed: List[Task] = []    # leaders superseded by its execve

    def pending_clone(self) -> bool:
        """Whether its unfinished call is a clone, fork or vfork."""
        return self.pending is not None and self.pending[0] in CLONE_NAMES

