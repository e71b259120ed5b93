"""tools/kernel_sass.py's reading of a disassembly (no GPU, no CUDA tools): loops, their loads,
and the loads issued before a loaded value is first used."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import kernel_sass as K  # noqa: E402

# nvdisasm -c's form: an outer loop (.L_x_0) around an inner one (.L_x_1) whose first load's
# value is used after two of its four loads (R4 is overwritten by an address before it is
# read, which is no use of a loaded value); a tail loop (.L_x_2) of one 8-byte load
LISTING = """
        .text.k:
        /*0000*/                   LDC R1, c[0x0][0x28] ;
.L_x_0:
        /*0010*/                   IMAD.MOV.U32 R20, RZ, RZ, 0x0 ;
.L_x_1:
        /*0020*/                   LDG.E R4, desc[UR6][R2.64] ;
        /*0030*/                   IADD3 R4, P0, R2, UR4, RZ ;
        /*0040*/                   LDG.E.64 R8, desc[UR6][R2.64+0x4] ;
        /*0050*/                   F2F.F64.F32 R10, R9 ;
        /*0060*/                   LDG.E R12, desc[UR6][R4.64] ;
        /*0070*/                   LDG.E R13, desc[UR6][R6.64] ;
        /*0080*/                   DMUL R20, R10, R20 ;
        /*0090*/              @!P1 BRA `(.L_x_1) ;
.L_x_2:
        /*00a0*/                   LDG.E.64 R14, desc[UR6][R2.64] ;
        /*00b0*/                   DMUL R20, R14, R20 ;
        /*00c0*/              @!P2 BRA `(.L_x_2) ;
        /*00d0*/                   STG.E.64 desc[UR6][R16.64], R20 ;
        /*00e0*/              @!P3 BRA `(.L_x_0) ;
        /*00f0*/                   EXIT ;
"""


def test_instructions_strip_addresses_predicates_and_encodings():
    ins = K.instructions(LISTING)
    assert ins[0] == (None, "LDC R1, c[0x0][0x28]")
    assert (".L_x_1", "") in ins and (None, "BRA `(.L_x_1)") in ins


def test_loads_before_the_first_use():
    body = ["LDG.E R4, desc[UR6][R2.64]", "IADD3 R4, P0, R2, UR4, RZ",
            "LDG.E.64 R8, desc[UR6][R2.64+0x4]", "F2F.F64.F32 R10, R9",
            "LDG.E R12, desc[UR6][R4.64]"]
    # R4's load is overwritten unread; the 8-byte load fills R8 and R9, read by the F2F
    assert K.loop_loads(body) == (3, 2, 16, 12)
    assert K.loop_loads(["LDG.E.U16.CONSTANT R4, desc[UR6][R2.64]",
                         "LDG.E.128 R8, desc[UR6][R6.64]", "FADD R7, R4, R5"]) == (2, 2, 18, 18)
    assert K.loop_loads(["IADD3 R4, R2, 0x1, RZ"]) == (0, 0, 0, 0)


def test_main_loop_is_the_innermost_reading_the_most_bytes():
    assert K.main_loop(LISTING) == (4, 2, 20, 12)
    assert K.main_loop(LISTING.replace("LDG", "LDS")) is None
    assert list(K.functions(LISTING)) == ["k"]


def test_of_equal_bytes_the_vector_loop_is_the_main_one():
    scalar = "\n".join(f"        /*{i:04x}*/ LDG.E R{4 + i}, desc[UR6][R2.64] ;" for i in range(8))
    listing = (".L_x_0:\n" + scalar + "\n        /*0100*/ FADD R20, R4, R5 ;\n"
               "        /*0110*/ @P0 BRA `(.L_x_0) ;\n.L_x_1:\n"
               "        /*0120*/ LDG.E.128 R8, desc[UR6][R2.64] ;\n"
               "        /*0130*/ FADD R20, R8, R9 ;\n"
               "        /*0140*/ LDG.E.128 R12, desc[UR6][R2.64+0x10] ;\n"
               "        /*0150*/ @P0 BRA `(.L_x_1) ;\n")
    assert K.main_loop(listing) == (2, 1, 32, 16)
