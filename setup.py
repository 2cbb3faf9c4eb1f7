"""Chorus: speech recipes (NVV-aware ASR, NVV TTS, SQA, Vietnamese VC).

Dependencies are pinned in tools/requirements.txt and installed by
``make -C tools``; this file only declares the package and its commands.
"""

from setuptools import find_packages, setup

CONSOLE_SCRIPTS = [
    # scoring, validation and packaging of submissions
    "chorus-score = pyutils.scoring.cli:main",
    # offline mini corpora
    "chorus-synth = pyutils.synth.cli:main",
    # Kaldi data-dir tools (validate/fix/split/subset/combine/copy)
    "chorus-datadir = pyutils.datadir.cli:main",
    # real-corpus preparers (NV-Bench, Emilia-NV, ... , QualiSpeech, VLSP VC)
    "chorus-prep = pyutils.corpora.cli:main",
    # diagnose a folder of audio with a trained SQA model
    "chorus-sqa = pyutils.sqa.diagnose:main",
]

setup(
    name="chorus",
    version="0.1.0",
    description="Kaldi/ESPnet-style recipes for NVV ASR/TTS, SQA and Vietnamese VC",
    packages=find_packages(include=["pyutils", "pyutils.*"]),
    python_requires=">=3.10",
    entry_points={"console_scripts": CONSOLE_SCRIPTS},
)
