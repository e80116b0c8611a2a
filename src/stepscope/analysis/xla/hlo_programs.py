"""The XLA programs of a profile, each with its compiled HLO module and buffer assignment.

XLA profilers (JAX, TensorFlow, XProf's TPU runtime) put one event metadata entry per
compiled program on the ``/host:metadata`` plane, named ``<module>(<program id>)`` (the
same label the XLA ops' ``hlo_module``/``program_id`` stats give, see ``hlo_ops``), with an
``Hlo Proto`` stat: the bytes of XLA's ``HloProto``. They are parsed here with stepscope's
own generated classes (``stepscope.protos.hlo_pb2``, only the fields the tools read).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from google.protobuf.message import DecodeError

from stepscope.errors import StepscopeError
from stepscope.protos import hlo_pb2
from stepscope.trace import names
from stepscope.trace.model import Profile

_LABEL = re.compile(r"^(?P<name>.*)\((?P<id>[^()]*)\)$")


@dataclass(frozen=True)
class Program:
    """One compiled XLA program: ``label`` is ``<module>(<program id>)`` as the profile names it."""

    label: str
    name: str
    program_id: str
    proto: hlo_pb2.HloProto
    where: str = ""  # "<file>: <tool>: program '<label>'": how errors about its proto begin


def hlo_programs(profile: Profile, tool_name: str) -> list[Program]:
    """Every program with an ``Hlo Proto`` on the profile's metadata plane(s), in the
    order the planes list them. A proto that does not parse is a one-line error naming the
    file and the program (the file is damaged, or the stat is not XLA's)."""
    programs = []
    for plane in profile.planes:
        if plane.name != names.METADATA_PLANE:
            continue
        for label, stats in zip(plane.metadata.names, plane.metadata.stats):
            for stat in stats:
                if stat.name != names.HLO_PROTO or not isinstance(stat.value, bytes):
                    continue
                proto = hlo_pb2.HloProto()
                try:
                    proto.ParseFromString(stat.value)
                except DecodeError as error:
                    raise StepscopeError(f"{profile.source}: {tool_name}: the HLO proto of program {label!r} is damaged ({error})") from None
                match = _LABEL.match(label)
                name, program_id = (match["name"], match["id"]) if match else (label, "")
                where = f"{profile.source}: {tool_name}: program {label!r}"
                programs.append(Program(label, proto.hlo_module.name or name, program_id, proto, where))
    return programs
