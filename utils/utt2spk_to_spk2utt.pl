#!/usr/bin/env perl
# Kaldi helper: utt2spk (file args or stdin) -> spk2utt on stdout.
# Speakers in order of first appearance, utterances in input order.
use strict; use warnings;
my (@order, %utts);
while (<>) {
  my @f = split;
  next unless @f;
  @f == 2 or die "utt2spk_to_spk2utt.pl: $ARGV:$.: expected '<utt> <spk>', got: $_";
  my ($utt, $spk) = @f;
  push @order, $spk unless exists $utts{$spk};
  push @{$utts{$spk}}, $utt;
}
print "$_ @{$utts{$_}}\n" for @order;
