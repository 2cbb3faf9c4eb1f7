#!/usr/bin/env perl
# Kaldi helper: split an scp (any id-keyed file) into contiguous parts.
#   utils/split_scp.pl [--utt2spk=<utt2spk>] <in> <out1> <out2> ...
#   utils/split_scp.pl [--utt2spk=<utt2spk>] -j <N> <k> <in> [<out>]   (only part k, 0-based)
# Parts are balanced by line count; with --utt2spk a speaker's lines stay in
# one part (lines of a speaker must then be consecutive in <in>).
use strict; use warnings;
my ($utt2spk_file, $nj, $k);
while (@ARGV && $ARGV[0] =~ /^-/) {
  my $o = shift @ARGV;
  if ($o =~ /^--utt2spk=(.+)$/) { $utt2spk_file = $1; }
  elsif ($o eq '--utt2spk') { $utt2spk_file = shift @ARGV; }
  elsif ($o eq '-j') { $nj = shift @ARGV; $k = shift @ARGV; }
  else { die "split_scp.pl: unknown option $o\n"; }
}
my $in = shift @ARGV or die "usage: split_scp.pl [--utt2spk=F] <in> <out1> ... | -j N k <in> [<out>]\n";
my @outs = @ARGV;
my $nparts = defined $nj ? $nj : scalar @outs;
$nparts >= 1 or die "split_scp.pl: no output files given\n";
open(my $fh, '<', $in) or die "split_scp.pl: cannot open $in: $!\n";
my @lines = <$fh>;
close $fh;
# groups of line indices (one per speaker, or one per line)
my @groups;
if (defined $utt2spk_file) {
  open(my $u, '<', $utt2spk_file) or die "split_scp.pl: cannot open $utt2spk_file: $!\n";
  my %spk; while (<$u>) { my @f = split; $spk{$f[0]} = $f[1] if @f == 2; } close $u;
  my (%seen, $prev);
  for my $i (0 .. $#lines) {
    my ($id) = split ' ', $lines[$i];
    defined $spk{$id} or die "split_scp.pl: $in: '$id' is not in $utt2spk_file\n";
    my $s = $spk{$id};
    if (!defined $prev || $s ne $prev) {
      die "split_scp.pl: $in: lines of speaker '$s' are not consecutive\n" if $seen{$s}++;
      push @groups, [];
    }
    push @{$groups[-1]}, $i; $prev = $s;
  }
} else {
  @groups = map { [$_] } 0 .. $#lines;
}
@groups >= $nparts or die "split_scp.pl: cannot split " . scalar(@groups) .
  (defined $utt2spk_file ? " speakers" : " lines") . " of $in into $nparts parts\n";
# contiguous, balanced: part p ends where the cumulative count passes (p+1)/n of the total
my $total = @lines; my @part_of; my ($cum, $p) = (0, 0); my @count = (0) x $nparts;
for my $g (0 .. $#groups) {
  my $left_groups = @groups - $g;   # this one included
  my $size = @{$groups[$g]};
  # move on once this part has its share (never leaving a part empty) ...
  $p++ if $p < $nparts - 1 && $count[$p] > 0 && $cum + $size / 2 > $total * ($p + 1) / $nparts;
  # ... or when every remaining group is needed to fill the remaining parts
  $p++ if $count[$p] > 0 && $left_groups <= $nparts - 1 - $p;
  $part_of[$g] = $p; $count[$p] += $size; $cum += $size;
}
my @bucket = map { [] } 1 .. $nparts;
push @{$bucket[$part_of[$_]]}, @lines[@{$groups[$_]}] for 0 .. $#groups;
if (defined $nj) {
  $k =~ /^\d+$/ && $k < $nj or die "split_scp.pl: -j $nj $k: k must be in 0..$nj-1\n";
  my $o = \*STDOUT;
  if (@outs) { open($o, '>', $outs[0]) or die "split_scp.pl: cannot write $outs[0]: $!\n"; }
  print $o @{$bucket[$k]};
} else {
  for my $i (0 .. $#outs) {
    open(my $o, '>', $outs[$i]) or die "split_scp.pl: cannot write $outs[$i]: $!\n";
    print $o @{$bucket[$i]}; close $o;
  }
}
