#!/usr/bin/env perl
# Kaldi helper: spk2utt (file args or stdin) -> utt2spk on stdout (input order).
use strict; use warnings;
while (<>) {
  my ($spk, @utts) = split;
  next unless defined $spk;
  @utts or die "spk2utt_to_utt2spk.pl: $ARGV:$.: speaker '$spk' has no utterances\n";
  print "$_ $spk\n" for @utts;
}
