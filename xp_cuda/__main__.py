"""`python -m xp_cuda`: the command line of xp_cuda._cli (the same as `xp-cuda`)."""
import sys

from xp_cuda._cli import main

if __name__ == "__main__":
    sys.exit(main())
