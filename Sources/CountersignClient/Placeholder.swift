public enum _PlaceholderCountersignClient {}
