"""Real hostile documents, built by the tests (issue 16, item 3): nothing here is mocked, each file is
what an attacker (or a broken exporter) would hand to LocalQwen's ingestion."""

from __future__ import annotations

import os
import zipfile
import zlib
from pathlib import Path

W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"


def pdf(objects: list[bytes], *, xref_offsets: list[int] | None = None) -> bytes:
    """A PDF of numbered ``objects`` (object 1 is the catalog) with a correct xref unless told otherwise."""
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    offsets = xref_offsets or offsets
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    for offset in offsets:
        out += f"{offset:010d} 00000 n \n".encode()
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


def _page(content_ref: int, font_ref: int) -> bytes:
    return (f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {content_ref} 0 R "
            f"/Resources << /Font << /F1 {font_ref} 0 R >> >> >>").encode()


def _stream(data: bytes, *, flate: bool = False) -> bytes:
    extra = b" /Filter /FlateDecode" if flate else b""
    return b"<< /Length %d%s >>\nstream\n" % (len(data), extra) + data + b"\nendstream"


FONT = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"


def good_pdf(path: Path, text: str) -> Path:
    content = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
    path.write_bytes(pdf([b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
                          _page(4, 5), _stream(content), FONT]))
    return path


def compression_bomb_pdf(path: Path, inflated_mb: int = 100) -> Path:
    """One page whose content stream is ~100 KB deflated and ``inflated_mb`` MB inflated."""
    packer = zlib.compressobj(9)
    block = b" " * 2**20
    packed = b"".join(packer.compress(block) for _ in range(inflated_mb)) + packer.flush()
    path.write_bytes(pdf([b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
                          _page(4, 5), _stream(packed, flate=True), FONT]))
    return path


def page_reference_flood_pdf(path: Path, references: int = 200_000, fan_out: int = 1000) -> Path:
    """A page tree referencing one page ``references`` times, ``fan_out`` per node (a 1.2 MB file
    that asks the parser to walk and extract 200k pages)."""
    nodes = references // fan_out
    first_node = 6
    kids = b" ".join(b"%d 0 R" % (first_node + n) for n in range(nodes))
    content = b"BT /F1 12 Tf 72 720 Td (again) Tj ET"
    leaf = b"<< /Type /Pages /Parent 2 0 R /Kids [" + b" ".join([b"3 0 R"] * fan_out) + b"] /Count %d >>" % fan_out
    path.write_bytes(pdf([b"<< /Type /Catalog /Pages 2 0 R >>",
                          b"<< /Type /Pages /Kids [" + kids + b"] /Count %d >>" % references,
                          _page(4, 5), _stream(content), FONT, *([leaf] * nodes)]))
    return path


def log_spamming_pdf(path: Path, broken_objects: int = 3000) -> Path:
    """A readable page that references thousands of objects whose xref offsets are all wrong: pypdf
    logs a warning for each object it has to hunt for (the issue saw 11,010 lines from one such file)."""
    content = b"BT /F1 12 Tf 72 720 Td (spam survives) Tj ET"
    refs = b" ".join(b"%d 0 R" % n for n in range(6, 6 + broken_objects))
    page = _page(4, 5)[:-2] + b" /Annots [" + refs + b"] >>"
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>", page,
               _stream(content), FONT, *(b"<< /Subtype /Text /Junk %d >>" % i for i in range(broken_objects))]
    offsets = _offsets(pdf(objects))
    path.write_bytes(pdf(objects, xref_offsets=[o if n < 5 else o + 3 for n, o in enumerate(offsets)]))
    return path


def _offsets(data: bytes) -> list[int]:
    offsets, number = [], 1
    while True:
        at = data.find(f"\n{number} 0 obj\n".encode())
        if at < 0:
            return offsets
        offsets.append(at + 1)
        number += 1


def zip_bomb_docx(path: Path, inflated_mb: int = 200) -> Path:
    """A .docx whose document.xml is ~200 KB packed and ``inflated_mb`` MB unpacked."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        archive.writestr("[Content_Types].xml", '<?xml version="1.0"?><Types/>')
        with archive.open("word/document.xml", "w", force_zip64=True) as member:
            member.write(f'<w:document xmlns:w="{W}"><w:body><w:p><w:r><w:t>'.encode())
            block = b"A" * 2**20
            for _ in range(inflated_mb):
                member.write(block)
            member.write(b"</w:t></w:r></w:p></w:body></w:document>")
    return path


def good_docx(path: Path, text: str) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("[Content_Types].xml", '<?xml version="1.0"?><Types/>')
        archive.writestr("word/document.xml", f'<w:document xmlns:w="{W}"><w:body><w:p><w:r><w:t>{text}'
                                              "</w:t></w:r></w:p></w:body></w:document>")
    return path


def fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path
