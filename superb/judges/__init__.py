"""superb.judges"""
