# Paths to real corpora, shared by every recipe: egs/<recipe>/db.sh is a link to this one file
# (egs/TEMPLATE/db.sh), so a path set here serves all recipes. A corpus is read only by a run
# that names it: ./run.sh --corpus NAME (NAME = the variable in lower case, e.g. --corpus
# qualispeech reads QUALISPEECH); NVV_TRACK1_TEST (a test set) and DEEPLY_NVV (see below) are
# read by egs/nvv_asr_* whenever set. Point these at your copies, e.g. NVBENCH=/data/NV-Bench.
NVBENCH=
EMILIA_NV=
NONVERBALTTS=
MNV17=
SMIIP_NV=
NVV_TRACK1_TEST=
QUALISPEECH=
VLSP2025_VC=
# Deeply Nonverbal Vocalization Dataset (OpenSLR 99; CC BY-NC-ND 4.0), read only when set,
# e.g. DEEPLY_NVV=/data/deeply_nvv (ROOT/dataset/<class>/*.wav): egs/nvv_asr_* prepare it
# (chorus-prep deeply_nvv, split by speaker), add its train speakers' clips to the mini
# corpus's NVV bank and fit the cascade's detector also on its train/dev clips spliced into
# real speech. Not an ASR training corpus (corpora=auto leaves it out).
DEEPLY_NVV=
