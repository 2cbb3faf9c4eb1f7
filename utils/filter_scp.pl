#!/usr/bin/env perl
# Kaldi helper: keep the lines of <in> whose id is listed in <id-list>.
#   utils/filter_scp.pl [--exclude] [-f N] <id-list> [<in>] > out
# The id of a line is its N-th field (default 1); the list's first field is used.
# Lines keep their input order.
use strict; use warnings;
my ($exclude, $field) = (0, 1);
while (@ARGV && $ARGV[0] =~ /^-/) {
  my $o = shift @ARGV;
  if ($o eq '--exclude') { $exclude = 1; }
  elsif ($o eq '-f') { $field = shift @ARGV; }
  elsif ($o =~ /^-f(\d+)$/) { $field = $1; }
  else { die "filter_scp.pl: unknown option $o\n"; }
}
$field =~ /^\d+$/ && $field >= 1 or die "filter_scp.pl: -f needs a positive integer\n";
@ARGV >= 1 && @ARGV <= 2 or die "usage: filter_scp.pl [--exclude] [-f N] <id-list> [<in>] > out\n";
my $list = shift @ARGV;
open(my $fh, '<', $list) or die "filter_scp.pl: cannot open $list: $!\n";
my %keep;
while (<$fh>) { my @f = split; $keep{$f[0]} = 1 if @f; }
close $fh;
while (<>) {
  my @f = split;
  next unless @f >= $field;
  my $in = exists $keep{$f[$field - 1]};
  print if ($in xor $exclude);
}
