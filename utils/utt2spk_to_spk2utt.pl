#!/usr/bin/env perl
# Kaldi helper: utt2spk (file args or stdin) -> spk2utt on stdout.
# Speakers in order of first appearance, utterances in input order.
use strict; use warnings;
# <> only warns about a file it cannot open and goes on (exit 0): check them first
for (@ARGV) { $_ eq '-' or -r $_ && !-d _ or die "utt2spk_to_spk2utt.pl: cannot read $_: " . (-d $_ ? 'is a directory' : $! || 'permission denied') . "\n"; }
my (@order, %utts);
while (<>) {
  my @f = split;
  next unless @f;
  @f == 2 or die "utt2spk_to_spk2utt.pl: $ARGV:$.: expected '<utt> <spk>', got: $_";
  my ($utt, $spk) = @f;
  push @order, $spk unless exists $utts{$spk};
  push @{$utts{$spk}}, $utt;
} continue {
  close ARGV if eof;  # $. counts lines of each file
}
print "$_ @{$utts{$_}}\n" for @order;
