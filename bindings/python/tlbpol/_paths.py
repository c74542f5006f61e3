# SPDX-License-Identifier: MIT
"""Where the library was installed with this package: not recorded.

This is the copy in the source tree, which a pip install or a wheel built
from bindings/python ships: such a package does not know where libtlbpol
is, and finds it as the dynamic loader does (tlbpol._ffi: $TLBPOL_LIBRARY,
pkg-config, ctypes.util.find_library, the soname).  `meson install` installs
a copy made from bindings/python/_paths.py.in instead, which records the
libdir it installed libtlbpol.so.0 into.
"""
from typing import Optional

LIBDIR: Optional[str] = None
VERSION: Optional[str] = None
RECORDED_BY = 'not recorded (not installed by meson)'
