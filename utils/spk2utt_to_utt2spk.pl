#!/usr/bin/env perl
# Kaldi helper: spk2utt (file args or stdin) -> utt2spk on stdout (input order).
use strict; use warnings;
# <> only warns about a file it cannot open and goes on (exit 0): check them first
for (@ARGV) { $_ eq '-' or -r $_ && !-d _ or die "spk2utt_to_utt2spk.pl: cannot read $_: " . (-d $_ ? 'is a directory' : $! || 'permission denied') . "\n"; }
while (<>) {
  my ($spk, @utts) = split;
  next unless defined $spk;
  @utts or die "spk2utt_to_utt2spk.pl: $ARGV:$.: speaker '$spk' has no utterances\n";
  print "$_ $spk\n" for @utts;
}
