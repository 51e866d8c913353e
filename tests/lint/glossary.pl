#!/usr/bin/perl
# glossary.pl: fail on a variant that checks/glossary.yaml retires, anywhere in content/ (*.md)
# or templates/ (*.html) of a site, outside fenced code blocks and code spans.
#
#   perl tests/lint/glossary.pl [SITE_DIR]     (default: the current directory)
#
# Prints `file:line:col: error: retired term "X" (the glossary's term is "Y")` per hit, columns
# in code points, and `file: note: ...` for the glossary's `pending` entries, which are
# reported but do not fail. Exit status: 0 clean, 1 a retired variant found, 2 bad input.
# The glossary's format is the subset documented at the top of checks/glossary.yaml: one term
# per `- term:` item, `retired:` / `retired_re:` as one-line flow lists of quoted strings.
use strict;
use warnings;
use utf8;
use File::Find;

binmode STDOUT, ':encoding(UTF-8)';
binmode STDERR, ':encoding(UTF-8)';
# bad input (an unreadable file, a glossary outside the documented format) exits 2
$SIG{__DIE__} = sub { print STDERR $_[0]; exit 2 };

my $root = shift // '.';
my $gloss = "$root/checks/glossary.yaml";
open my $gh, '<:encoding(UTF-8)', $gloss or die "glossary.pl: cannot read $gloss: $!\n";

# quoted strings of a one-line flow list: ["a", 'b']; double-quoted strings may escape \" and \\
sub S_list {
    my ($text, $where) = @_;
    $text =~ /^\s*\[(.*)\]\s*$/ or die "glossary.pl: $where: expected a one-line [ ... ] list\n";
    my $inner = $1;
    my @out;
    while ($inner =~ /\G\s*(?:"((?:[^"\\]|\\.)*)"|'((?:[^']|'')*)')\s*(?:,|$)/gc) {
        if (defined $1) { (my $s = $1) =~ s/\\(.)/$1/g; push @out, $s }
        else { (my $s = $2) =~ s/''/'/g; push @out, $s }
    }
    pos($inner) = undef;
    die "glossary.pl: $where: cannot read the list $text\n"
        if $inner !~ /^\s*$/ && !@out;
    return @out;
}

my (@rules, %pending, $term, $section);
while (my $line = <$gh>) {
    chomp $line;
    next if $line =~ /^\s*(#|$)/;
    if ($line =~ /^(\w+):\s*$/) { $section = $1; next }
    my $where = "$gloss:$.";
    if ($section eq 'terms') {
        if ($line =~ /^\s*-\s*term:\s*"([^"]*)"\s*$/) { $term = $1; next }
        if ($line =~ /^\s*retired:\s*(.*)$/) {
            defined $term or die "glossary.pl: $where: retired before any term\n";
            push @rules, {term => $term, text => $_, re => qr/\Q$_\E/} for S_list($1, $where);
        } elsif ($line =~ /^\s*retired_re:\s*(.*)$/) {
            defined $term or die "glossary.pl: $where: retired_re before any term\n";
            for my $p (S_list($1, $where)) {
                my $re = eval { local $SIG{__DIE__}; qr/$p/ } or die "glossary.pl: $where: bad pattern $p: $@\n";
                push @rules, {term => $term, text => $p, re => $re};
            }
        }
    } elsif ($section eq 'pending') {
        if ($line =~ /^\s*"([^"]+)":\s*(.*)$/) {
            $pending{$1}{$_} = 1 for S_list($2, $where);
        } else {
            die "glossary.pl: $where: pending entries are \"path\": [\"variant\", ...]\n";
        }
    }
}
close $gh;
@rules or die "glossary.pl: $gloss: no retired variants found (is the file in the documented format?)\n";

my @files;
for my $dir (['content', qr/\.md$/], ['templates', qr/\.html$/]) {
    my ($d, $ext) = @$dir;
    next unless -d "$root/$d";
    find({no_chdir => 1, wanted => sub { push @files, $File::Find::name if -f && /$ext/ }}, "$root/$d");
}
@files = sort @files;

my ($errors, $notes) = (0, 0);
for my $path (@files) {
    (my $rel = $path) =~ s{^\Q$root\E/}{};
    my $is_md = $rel =~ /\.md$/;
    open my $fh, '<:encoding(UTF-8)', $path or die "glossary.pl: cannot read $path: $!\n";
    my $fence;    # the opening fence of the code block we are in, or undef
    while (my $line = <$fh>) {
        chomp $line;
        if ($is_md) {
            if (defined $fence) {
                $fence = undef if $line =~ /^\s*(\Q$fence\E+)\s*$/ && length($1) >= length($fence);
                next;
            }
            if ($line =~ /^\s*(`{3,}|~{3,})/) { $fence = $1; next }
            # blank out code spans, keeping columns: `x`, ``x``, ...
            $line =~ s/(`+)(.*?)\1/' ' x (length($1) * 2 + length($2))/ge;
        }
        my %seen;    # one report per column: the longest variant that starts there
        for my $r (@rules) {
            while ($line =~ /$r->{re}/g) {
                my ($col, $len) = ($-[0] + 1, $+[0] - $-[0]);
                next if $len == 0;
                $seen{$col} = {%$r, len => $len} if !$seen{$col} || $seen{$col}{len} < $len;
            }
        }
        for my $col (sort { $a <=> $b } keys %seen) {
            my $r = $seen{$col};
            my $found = substr($line, $col - 1, $r->{len});
            if ($pending{$rel} && ($pending{$rel}{$found} || $pending{$rel}{$r->{text}})) {
                print "$rel:$.:$col: note: retired term \"$found\" left pending (glossary: \"$r->{term}\")\n";
                $notes++;
            } else {
                print "$rel:$.:$col: error: retired term \"$found\" (the glossary's term is \"$r->{term}\")\n";
                $errors++;
            }
        }
    }
    close $fh;
}
printf "glossary: %d files, %d retired variants, %d errors, %d pending\n",
    scalar @files, scalar @rules, $errors, $notes;
exit($errors ? 1 : 0);
