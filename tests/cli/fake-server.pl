# tests/cli/fake-server.pl — a hostile stand-in for gpupoold, for the CLI's
# tests: it answers every request on 127.0.0.1 with the bytes of one file,
# and records each request head it receives.
#
#   perl fake-server.pl ANSWER_FILE PORT_FILE LOG_FILE
#
# The port it listens on is written to PORT_FILE; it serves until killed.
use strict;
use warnings;
use IO::Socket::INET;

my ($answer_file, $port_file, $log_file) = @ARGV;
my $srv = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => 0, Listen => 16,
                                ReuseAddr => 1) or die "listen: $!";
open(my $pf, '>', "$port_file.tmp") or die;
print $pf $srv->sockport(), "\n";
close($pf);
rename("$port_file.tmp", $port_file);
while (my $c = $srv->accept()) {
    my $head = '';
    while ($head !~ /\r\n\r\n/) {
        my $n = sysread($c, my $buf, 4096);
        last unless $n;
        $head .= $buf;
    }
    open(my $lf, '>>', $log_file) or die;
    print $lf $head;
    close($lf);
    open(my $af, '<', $answer_file) or die;
    local $/;
    my $answer = <$af>;
    close($af);
    print $c $answer;
    close($c);
}
