"""Helpers for the RAG tests: real documents in several formats, built on the fly."""

from __future__ import annotations

import zipfile
from pathlib import Path


def write_pdf(path: Path, pages: list[str]) -> Path:
    """A small valid PDF with one text line per page (Helvetica), written by hand."""
    objects: list[bytes] = []
    kids = " ".join(f"{3 + 2 * i} 0 R" for i in range(len(pages)))
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {len(pages)} >>".encode())
    font_id = 3 + 2 * len(pages)
    for i, text in enumerate(pages):
        safe = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
        stream = f"BT /F1 12 Tf 72 720 Td ({safe}) Tj ET".encode()
        objects.append(f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {4 + 2 * i} 0 R "
                       f"/Resources << /Font << /F1 {font_id} 0 R >> >> >>".encode())
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    for offset in offsets:
        out += f"{offset:010d} 00000 n \n".encode()
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    path.write_bytes(bytes(out))
    return path


def write_encrypted_pdf(path: Path, text: str, password: str = "secret") -> Path:
    from pypdf import PdfReader, PdfWriter

    plain = write_pdf(path.with_suffix(".plain.pdf"), [text])
    writer = PdfWriter()
    for page in PdfReader(str(plain)).pages:
        writer.add_page(page)
    writer.encrypt(user_password=password, owner_password=password, algorithm="AES-128")
    with open(path, "wb") as handle:
        writer.write(handle)
    plain.unlink()
    return path


def write_docx(path: Path, paragraphs: list[tuple[str, str]]) -> Path:
    """A minimal .docx: (style, text) paragraphs; style "Heading1" etc. or "" for body text."""
    ns = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
    body = ""
    for style, text in paragraphs:
        props = f'<w:pPr><w:pStyle w:val="{style}"/></w:pPr>' if style else ""
        body += f"<w:p>{props}<w:r><w:t>{text}</w:t></w:r></w:p>"
    document = f'<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="{ns}"><w:body>{body}</w:body></w:document>'
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("[Content_Types].xml", '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>')
        archive.writestr("word/document.xml", document)
    return path


STATINS_MD = """# Statins
Statins are drugs that lower LDL cholesterol in the blood.

## Benefits
Statin therapy reduces the risk of heart attack and stroke in people with high cholesterol.

## Side effects
Muscle pain (myalgia) is the most common side effect of statins.
"""

VITAMIN_TXT = "Vitamin D helps the body absorb calcium. Sunlight on the skin produces vitamin D."


def docs_folder(root: Path) -> Path:
    folder = root / "docs"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "statins.md").write_text(STATINS_MD, encoding="utf-8")
    (folder / "vitamin.txt").write_text(VITAMIN_TXT, encoding="utf-8")
    write_pdf(folder / "aspirin.pdf", ["Aspirin inhibits platelet aggregation.",
                                       "Low dose aspirin is used to prevent blood clots after a heart attack."])
    return folder


def kb_manager(**options):
    """A knowledge-base manager over this test's LocalQwen home, built the way the app builds it."""
    from localqwen.app import Workbench
    from localqwen.retrieval.knowledge_base import KnowledgeBaseManager

    services = Workbench.create().services
    return KnowledgeBaseManager(services.database, services.paths.data_dir / "retrieval",
                                device=services.device, **options)
