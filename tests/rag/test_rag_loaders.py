"""Document loaders: formats, encodings and bad input, each with a clear per-file error."""

from __future__ import annotations

import os
import random
import re

import pytest
from rag_helpers import write_docx, write_encrypted_pdf, write_pdf

from localqwen.retrieval.loaders import DocumentError, decode_text, load_document, markdown_blocks


def test_markdown_keeps_heading_path():
    blocks = markdown_blocks("# A\nintro\n## B\nbody b\n### C\nbody c\n## D\nbody d\n```\n# not a heading\n```\n")
    assert [(b.headings, b.text.splitlines()[0]) for b in blocks] == [
        (("A",), "intro"), (("A", "B"), "body b"), (("A", "B", "C"), "body c"), (("A", "D"), "body d")]
    assert "# not a heading" in blocks[-1].text


SIMPLIFIED = "维生素D有助于钙的吸收，阳光照射皮肤可以产生维生素D。" * 3
TRADITIONAL = "維生素D有助於鈣的吸收，陽光照射皮膚可以產生維生素D。" * 3


@pytest.mark.parametrize("encoding,text", [("utf-8", SIMPLIFIED), ("gb18030", SIMPLIFIED), ("utf-16", SIMPLIFIED),
                                           ("utf-8-sig", SIMPLIFIED), ("big5", TRADITIONAL),
                                           ("shift_jis", "ビタミンDはカルシウムの吸収を助けます。日光を浴びると皮膚でビタミンDが作られます。" * 2)])
def test_encodings_are_detected(tmp_path, encoding, text):
    path = tmp_path / f"doc-{encoding}.txt"
    path.write_bytes(text.encode(encoding))
    document = load_document(path)
    assert document.blocks[0].text.strip() == text
    assert document.encoding


def test_mixed_encodings_are_read_line_by_line(tmp_path):
    utf8_line = "第一行是 UTF-8 编码的中文。".encode()
    gbk_line = "第二行是 GBK 编码的中文内容，用来测试混合编码。".encode("gbk")
    path = tmp_path / "mixed.txt"
    path.write_bytes(utf8_line + b"\n" + gbk_line + b"\n")
    document = load_document(path)
    assert "第一行是 UTF-8 编码的中文。" in document.blocks[0].text
    assert "第二行是 GBK 编码的中文内容" in document.blocks[0].text
    assert document.encoding.startswith("mixed")
    assert document.warnings and "mixed encodings" in document.warnings[0]


def test_pdf_pages_docx_and_html_headings(tmp_path):
    pdf = load_document(write_pdf(tmp_path / "a.pdf", ["First page text.", "Second page text."]))
    assert [(b.page, b.text.strip()) for b in pdf.blocks] == [(1, "First page text."), (2, "Second page text.")]
    docx = load_document(write_docx(tmp_path / "a.docx", [("Heading1", "Intro"), ("", "Hello there."),
                                                          ("Heading2", "Detail"), ("", "More text.")]))
    assert [(b.headings, b.text) for b in docx.blocks] == [(("Intro",), "Hello there."),
                                                           (("Intro", "Detail"), "More text.")]
    html = tmp_path / "a.html"
    html.write_text("<html><head><title>x</title><script>var a=1;</script></head><body><h1>Top</h1><p>One.</p>"
                    "<h2>Sub</h2><p>Two &amp; three.</p></body></html>", encoding="utf-8")
    blocks = load_document(html).blocks
    assert [(b.headings, b.text) for b in blocks] == [(("Top",), "One."), (("Top", "Sub"), "Two & three.")]


@pytest.mark.parametrize("name,content,message", [
    ("empty.txt", b"", "empty (0 bytes)"),
    ("blob.txt", bytes(range(256)) * 40, "binary"),
    ("broken.pdf", b"%PDF-1.4\n1 0 obj << /Type /Catalog >> garbage without xref", "malformed PDF"),
    ("fake.docx", b"this is not a zip", "not a valid .docx"),
    ("image.png", b"\x89PNG\r\n\x1a\n", "unsupported file type"),
    ("blank.md", b"   \n\n  ", "no text found"),
])
def test_bad_files_give_specific_errors(tmp_path, name, content, message):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(DocumentError, match=re.escape(message)) as info:
        load_document(path)
    assert name in str(info.value)


def test_blank_and_encrypted_pdfs(tmp_path):
    with pytest.raises(DocumentError, match="no extractable text"):
        load_document(write_pdf(tmp_path / "blank.pdf", [""]))
    with pytest.raises(DocumentError, match="password-protected|encrypted"):
        load_document(write_encrypted_pdf(tmp_path / "locked.pdf", "Top secret text."))


def test_size_limit_checked_before_reading(tmp_path):
    big = tmp_path / "huge.txt"
    with open(big, "wb") as handle:  # sparse: 500 MB on paper, nothing on disk
        handle.truncate(500 * 1024 * 1024)
    assert os.stat(big).st_blocks * 512 < 10 * 1024 * 1024
    with pytest.raises(DocumentError, match="500 MB is over the 100 MB limit"):
        load_document(big)


def test_decode_text_reports_undetectable_data():
    with pytest.raises(DocumentError):
        decode_text(random.Random(0).randbytes(4000), "x.txt")
