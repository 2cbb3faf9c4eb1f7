"""pyutils.vc.package_zip: the submission zip of local/vc.sh stage 8."""
import subprocess
import sys
import zipfile

from pyutils.vc.package_zip import package


def test_zips_only_the_wavs_flat_and_sorted(tmp_path):
    d = tmp_path / "sub"
    d.mkdir()
    for name in ("b.wav", "a.wav", "notes.txt"):
        (d / name).write_bytes(b"RIFF" + name.encode())
    out = tmp_path / "sub.zip"
    assert package(str(d), str(out)) == 2
    with zipfile.ZipFile(out) as z:
        assert z.namelist() == ["a.wav", "b.wav"]
        assert z.read("b.wav") == b"RIFFb.wav"
    assert not (tmp_path / "sub.zip.tmp").exists()


def test_an_empty_folder_is_an_error_naming_it(tmp_path):
    (tmp_path / "empty").mkdir()
    r = subprocess.run([sys.executable, "-m", "pyutils.vc.package_zip", "--dir", str(tmp_path / "empty"),
                        "--out", str(tmp_path / "x.zip")], capture_output=True, text=True)
    assert r.returncode == 1
    assert f"{tmp_path / 'empty'}: no .wav files" in r.stderr
    assert not (tmp_path / "x.zip").exists()
